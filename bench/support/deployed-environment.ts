import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadEnvironmentConfig } from '../../infra/config.ts';
import {
  RUNNER_CONTAINER_NAME,
  RUNNER_IMAGE_SETTINGS,
  RUNNER_LOG_STREAM_PREFIX,
  taskFamilyOf,
} from '../../infra/constructs/runners.ts';
import { functionEnvironment } from '../../infra/function-environment.ts';

/**
 * The environment the stack gives every function (infra/function-environment.ts)
 * in cdk.json's `dev` environment, with made-up names for the resources the
 * stack would create. Beside the table, queues and bucket, that is the runner
 * settings from cdk.json and the ECS settings the stack owns, which the
 * composition root parses at cold start (shared/config/load-settings.ts): a
 * bench without them times a function no stack deploys (about 2% less for
 * GetRun, measured in pairs).
 */
export function deployedEnvironment(): Record<string, string> {
  const cdk = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../cdk.json'), 'utf8')) as {
    context: { environments: unknown };
  };
  const config = loadEnvironmentConfig('dev', cdk.context.environments);
  const prefix = `remote-worker-${config.name}`; // as the stack names its resources
  const account = config.account;
  // Image → family, the first setting naming an image keeping it (the stack's familiesByImage).
  const taskDefinitions: Record<string, string> = {};
  for (const setting of RUNNER_IMAGE_SETTINGS) {
    taskDefinitions[String(config.parsedSettings[setting])] ??= taskFamilyOf(prefix, setting);
  }
  const variables = functionEnvironment({
    config,
    tableName: 'bench-runs',
    dispatchQueueUrl: `https://sqs.${config.region}.amazonaws.com/${account}/${prefix}-dispatch`,
    relayQueueUrl: `https://sqs.${config.region}.amazonaws.com/${account}/${prefix}-relay`,
    assetBucket: 'bench-assets',
    runLogGroup: 'bench-runs',
    cluster: prefix,
    executionRoleArn: `arn:aws:iam::${account}:role/${prefix}-runner-execution`,
    taskDefinitions,
    containerName: RUNNER_CONTAINER_NAME,
    logStreamPrefix: RUNNER_LOG_STREAM_PREFIX,
    perRunFamilyPrefix: `${prefix}-run-`,
  });
  // The region Lambda sets, which the SDK clients read.
  return { ...variables, AWS_REGION: config.region };
}
