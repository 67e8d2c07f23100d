import { Token } from 'aws-cdk-lib';
import { sealableSettings } from '../shared/config/load-settings.ts';
import { sealedSettingsEnvironment } from '../shared/config/sealed-settings.ts';
import type { EnvironmentConfig } from './config.ts';

/** Namespace of the metrics the stack derives from logs (and of Powertools metrics, when handlers emit them). */
export const METRIC_NAMESPACE = 'RemoteWorker';

export interface FunctionEnvironmentInputs {
  readonly config: EnvironmentConfig;
  readonly tableName: string;
  readonly dispatchQueueUrl: string;
  readonly relayQueueUrl: string;
  readonly assetBucket: string;
  readonly runLogGroup: string;
  readonly cluster: string;
  readonly executionRoleArn: string;
  /** Runner image → its task definition family; the dispatcher launches `ecs` runs from these. */
  readonly taskDefinitions: Readonly<Record<string, string>>;
  /** The runner container in every task definition (RUNNER_CONTAINER_NAME). */
  readonly containerName: string;
  /** The awslogs stream prefix of that container (RUNNER_LOG_STREAM_PREFIX). */
  readonly logStreamPrefix: string;
  /** Family prefix of the per-run task definitions the launcher registers, and IAM allows. */
  readonly perRunFamilyPrefix: string;
}

/** Where values minted for one run live (kubeconfig tokens, checked-out logins): under the environment's prefix. */
export const runSecretsPrefix = (secretsPrefix: string): string => `${secretsPrefix}runs/`;

/** Settings are strings in the environment: lists comma-joined, which loadSettings splits again. */
function settingValue(value: unknown): string {
  if (Array.isArray(value)) return value.map(String).join(',');
  return String(value);
}

/**
 * The environment every handler gets: exactly the variables the AWS
 * composition root validates at cold start (`readAwsEnvironment` in
 * shared/composition/aws-environment.ts), plus each runner setting the operator wrote in
 * cdk.json and the ECS settings the stack owns. The settings known at synth
 * are checked here and sealed (shared/config/sealed-settings.ts:
 * REMOTE_WORKER_SETTINGS and its digest), so a cold start does not check them
 * again; the ones the stack learns only at deploy (the cluster's name, the
 * execution role's ARN: CloudFormation references) and any a schema would not
 * take back the same are one variable each, upper-cased as loadSettings reads
 * them, and checked at cold start. Setting defaults are not copied: they stay
 * in shared/config/settings.ts.
 */
export function functionEnvironment(inputs: FunctionEnvironmentInputs): Record<string, string> {
  const settings: Record<string, unknown> = {
    ...inputs.config.rawSettings,
    // One id or several, comma-separated: ecsNetworkFromSettings splits them.
    ansible_ecs_subnet_id: inputs.config.network.runnerSubnetIds,
    ansible_ecs_security_group_ids: inputs.config.network.runnerSecurityGroupIds,
  };
  // Known only at deploy (references to the stack's own cluster and role): never sealed.
  const atDeploy: Record<string, unknown> = {
    ansible_ecs_cluster: inputs.cluster,
    ansible_ecs_execution_role_arn: inputs.executionRoleArn,
  };
  const env: Record<string, string> = {
    RUNS_TABLE: inputs.tableName,
    DISPATCH_QUEUE_URL: inputs.dispatchQueueUrl,
    RELAY_QUEUE_URL: inputs.relayQueueUrl,
    ASSET_BUCKET: inputs.assetBucket,
    LOG_GROUP: inputs.runLogGroup,
    ECS_TASK_DEFINITIONS: JSON.stringify(inputs.taskDefinitions),
    ECS_CONTAINER_NAME: inputs.containerName,
    ECS_LOG_STREAM_PREFIX: inputs.logStreamPrefix,
    ECS_TASK_FAMILY_PREFIX: inputs.perRunFamilyPrefix,
    RUN_SECRETS_PREFIX: runSecretsPrefix(inputs.config.secretsPrefix),
    LOG_LEVEL: 'INFO',
  };
  const known: Record<string, string> = {};
  for (const [key, value] of Object.entries(settings)) {
    if (value === undefined) continue;
    const text = settingValue(value);
    // A reference anywhere in the text (a list's item, say) is resolved only at deploy.
    if (Token.isUnresolved(text)) atDeploy[key] = value;
    else known[key] = text;
  }
  for (const [key, value] of Object.entries(atDeploy)) env[key.toUpperCase()] = settingValue(value);
  const { sealed, rest } = sealableSettings(known);
  if (Object.keys(sealed).length > 0) Object.assign(env, sealedSettingsEnvironment(sealed));
  for (const [key, text] of Object.entries(rest)) env[key.toUpperCase()] = text;
  return env;
}
