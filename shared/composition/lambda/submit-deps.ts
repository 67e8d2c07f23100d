import { SQSClient } from '@aws-sdk/client-sqs';
import { SqsWorkQueue } from '../../adapters/sqs/work-queue.ts';
import type { RelayAvailability } from '../../app/deps.ts';
import { LauncherUnavailableError } from '../../domain/errors.ts';
import type { Runner } from '../../domain/run.ts';
import type { ApiDeps } from '../../http/api-deps.ts';
import { apiGatewayAuthenticator } from '../../http/api-gateway-auth.ts';
import { newId } from '../../lib/ids.ts';
import type { LogReader } from '../../ports/log-store.ts';
import { readAwsEnvironment } from '../aws-environment.ts';
import { lazySecretsManagerClient, lazySubmittedRunSecrets } from '../lazy-run-secrets.ts';
import { cloudRunnerAvailability, NO_RELAY_REASON, planningLaunchers } from '../runner-availability.ts';
import { assetStorage } from './asset-deps.ts';
import { lambdaLogger } from './logger.ts';
import { tableStores } from './table-deps.ts';

/**
 * The deps of a submit (POST /runs, POST /batches, POST /batches/{id}/retry),
 * from the Lambda environment: the runs table (DynamoDB), the asset bucket
 * (S3) and the dispatch queue (SQS), nothing else. Planning a run asks only
 * whether this deployment has a launcher for its runner, which the settings
 * answer (runner-availability.ts); the launchers themselves, and the ECS and
 * CloudWatch Logs clients, are the dispatcher's. Secrets Manager is loaded
 * only when a submit carries plaintext passwords (a chunk of its own).
 */
export function submitApiDeps(source: Readonly<Record<string, string | undefined>>): ApiDeps {
  const configuration = readAwsEnvironment(source);
  const { env, settings } = configuration;
  const logger = lambdaLogger(env.LOG_LEVEL);
  const tables = tableStores(source, configuration, logger);
  const storage = assetStorage(configuration);
  const sqs = new SQSClient({});
  const cloud = cloudRunnerAvailability(settings, {
    taskDefinitions: env.ECS_TASK_DEFINITIONS ?? {},
    taskDefinitionsKey: 'ECS_TASK_DEFINITIONS',
  });
  const relay: RelayAvailability =
    env.RELAY_QUEUE_URL === undefined ? { available: false, reason: NO_RELAY_REASON } : { available: true };
  const runners: Runner[] = [...cloud.available, ...(relay.available ? (['local'] as const) : [])];
  return {
    ...tables,
    dispatchQueue: new SqsWorkQueue({ client: sqs, queueUrl: env.DISPATCH_QUEUE_URL }),
    logs: noLogs,
    assets: storage.assets,
    storage,
    settings,
    launchers: planningLaunchers(runners, 'A submit'),
    relay,
    newId: () => newId(tables.clock.nowMs()),
    logger,
    ...(env.RUN_SECRETS_PREFIX === undefined
      ? {}
      : { runSecrets: lazySubmittedRunSecrets(lazySecretsManagerClient(), env.RUN_SECRETS_PREFIX) }),
    authenticate: apiGatewayAuthenticator(),
  };
}

/** Submits read no run output. */
const noLogs: LogReader = {
  read: () => Promise.reject(new LauncherUnavailableError('A submit does not read run output')),
};
