import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDiscoveryStore } from '../adapters/dynamodb/discovery-store.ts';
import { DynamoLaunchBudgets } from '../adapters/dynamodb/launch-budget.ts';
import { DynamoLaunchSlots } from '../adapters/dynamodb/launch-slots.ts';
import { DynamoLogStore } from '../adapters/dynamodb/log-store.ts';
import { DynamoRunStore } from '../adapters/dynamodb/run-store.ts';
import { DynamoTargetStore } from '../adapters/dynamodb/target-store.ts';
import { RelayLauncher } from '../adapters/relay/relay-launcher.ts';
import type { AppDeps, RelayAvailability } from '../app/deps.ts';
import type { Run, Runner } from '../domain/run.ts';
import type { ApiDeps } from '../http/api-deps.ts';
import { apiGatewayAuthenticator } from '../http/api-gateway-auth.ts';
import { newId } from '../lib/ids.ts';
import { systemClock } from '../ports/clock.ts';
import type { Launchers } from '../ports/launcher.ts';
import { forcePathStyle, readAwsEnvironment } from './aws-environment.ts';
import { buildCloudSecretSources } from './cloud-secrets.ts';
import { buildStoredDiscovery } from './discovery.ts';
import { lambdaLogger } from './lambda/logger.ts';
import { accountOfQueueUrl, buildLaunchGate } from './launch-budget.ts';
import { buildCloudLaunchers, lazyClusterAuth } from './launchers.ts';
import { lazyAwsClients, lazyLogReader, lazySecretSource, lazySqsQueue } from './lazy-aws.ts';
import { lazySubmittedRunSecrets } from './lazy-run-secrets.ts';
import { lazyS3AssetStore } from './lazy-s3-assets.ts';
import { lazyPasswordSafe } from './password-safe.ts';
import { NO_RELAY_REASON } from './runner-availability.ts';
import { buildAwsStorage } from './storage.ts';
import { taskPrepDeps } from './task-prep-deps.ts';

export { AWS_ENVIRONMENT_KEYS, type AwsEnvironment, readAwsEnvironment } from './aws-environment.ts';

export interface AwsDeps extends AppDeps {
  /** Claims made by this process name it: `lambda:<function>:<cold start id>`. */
  readonly ownerId: string;
  /** ECS_CONTAINER_NAME: the runner container of the ECS task definitions, whose exit code is the run's. */
  readonly ecsContainerName: string;
  /** Why each runner this deployment does not have is missing (`ecs`: which settings are not set). */
  readonly unavailable: Readonly<Partial<Record<Runner, string>>>;
}

/**
 * Build the AWS mode's dependencies from the Lambda environment: DynamoDB
 * runs table, SQS dispatch queue, S3 assets, CloudWatch Logs reader,
 * the JSON-line logger (lambda/logger.ts), and a launcher per configured backend. Creates the SDK
 * clients (which honour AWS_REGION and AWS_ENDPOINT_URL) and makes no call.
 *
 * @example
 * const deps = buildAwsDeps(process.env);
 * export const handler = makeDispatchRuns(deps);
 */
export function buildAwsDeps(source: Readonly<Record<string, string | undefined>>): AwsDeps {
  const { env, settings } = readAwsEnvironment(source);
  const logger = lambdaLogger(env.LOG_LEVEL);
  const clock = systemClock;
  // Every function reads the runs table; the other SDKs load, with their adapters, on first use (lazy-aws.ts).
  const clients = { dynamodb: new DynamoDBClient({}), ...lazyAwsClients() };
  const store = new DynamoRunStore({ client: clients.dynamodb, tableName: env.RUNS_TABLE, clock });
  const targets = new DynamoTargetStore({ client: clients.dynamodb, tableName: env.RUNS_TABLE });

  const logStreams: Partial<Record<Runner, (run: Run) => string | undefined>> = {};
  const logs = lazyLogReader(clients.logs, {
    logGroup: env.LOG_GROUP,
    streamFor: async (runId) => {
      const run = await store.getRun(runId);
      const backend = run?.launch?.backend;
      return run === undefined || backend === undefined ? undefined : logStreams[backend]?.(run);
    },
  });

  // The S3 SDK loads on the first asset call: the pollers, the reconciler and the settling functions make none.
  const storage = buildAwsStorage({
    settings,
    bucket: env.ASSET_BUCKET,
    ...(env.ASSET_PREFIX === undefined ? {} : { prefix: env.ASSET_PREFIX }),
    s3: (location) => lazyS3AssetStore(location, forcePathStyle(env)),
  });
  const assets = storage.assets;

  const secrets = lazySecretSource(clients.secretsManager, clock);
  const credentials = lazyPasswordSafe(settings, secrets);
  // Discovered VMs: each cloud's list in the runs table, so submit and dispatch can target them.
  const discovery = buildStoredDiscovery({
    settings,
    env: source,
    clock,
    logger,
    store: new DynamoDiscoveryStore({ client: clients.dynamodb, tableName: env.RUNS_TABLE }),
  });
  const material = {
    settings,
    clusterAuth: lazyClusterAuth(clock),
    cloudSecrets: buildCloudSecretSources(settings),
    ...(credentials === undefined ? {} : { credentials }),
    ...(discovery === undefined ? {} : { discovery }),
  };
  const prepareDeps = taskPrepDeps({ store, targets, assets, storage, secrets, ...material });
  const runLogs = new DynamoLogStore({
    client: clients.dynamodb,
    tableName: env.LOGS_TABLE ?? env.RUNS_TABLE,
    clock,
  });
  const cloud = buildCloudLaunchers({
    settings,
    clients: { ecs: clients.ecs, secretsManager: clients.secretsManager },
    ecs: {
      taskDefinitions: env.ECS_TASK_DEFINITIONS ?? {},
      taskDefinitionsKey: 'ECS_TASK_DEFINITIONS',
      containerName: env.ECS_CONTAINER_NAME,
      logStreamPrefix: env.ECS_LOG_STREAM_PREFIX,
      runSecretsPrefix: env.RUN_SECRETS_PREFIX,
      familyPrefix: env.ECS_TASK_FAMILY_PREFIX,
    },
    store,
    assets,
    logs,
    clock,
    logger,
    secrets,
    // Task preparation (connection material, the task spec's checks) loads on the first launch: of the
    // functions over this composition only the dispatcher prepares tasks.
    prepare: async (run, options) =>
      (await import('../app/task-prep.ts')).prepareTask(prepareDeps, run, options),
    runLogs,
  });
  Object.assign(logStreams, cloud.logStreams);
  const launchers: Launchers = { ...cloud.launchers };
  const unavailable: Partial<Record<Runner, string>> = { ...cloud.unavailable };
  if (env.RELAY_QUEUE_URL === undefined) {
    unavailable.local = NO_RELAY_REASON;
  } else {
    launchers.local = new RelayLauncher(
      lazySqsQueue(clients.sqs, env.RELAY_QUEUE_URL),
      // Where the relay writes its output (runners/relay/config.ts: LOGS_TABLE, default RUNS_TABLE).
      runLogs,
    );
  }
  const relay: RelayAvailability =
    launchers.local === undefined
      ? { available: false, reason: unavailable.local ?? 'no relay launcher is registered' }
      : { available: true };

  return {
    store,
    targets,
    dispatchQueue: lazySqsQueue(clients.sqs, env.DISPATCH_QUEUE_URL),
    logs,
    assets,
    storage,
    settings,
    launchers,
    relay,
    clock,
    newId: () => newId(clock.nowMs()),
    logger,
    ...(credentials === undefined ? {} : { credentials }),
    ...(discovery === undefined ? {} : { discovery }),
    // Launch budgets shared by every container, in the runs table (shared/composition/launch-budget.ts).
    launchBudget: buildLaunchGate(
      settings,
      {
        account: accountOfQueueUrl(env.DISPATCH_QUEUE_URL),
        region: source.AWS_REGION ?? source.AWS_DEFAULT_REGION,
      },
      new DynamoLaunchBudgets({ client: clients.dynamodb, tableName: env.RUNS_TABLE }),
      new DynamoLaunchSlots({ client: clients.dynamodb, tableName: env.RUNS_TABLE }),
    ),
    // Plaintext passwords sent at submit, kept under RUN_SECRETS_PREFIX until their run ends.
    ...(env.RUN_SECRETS_PREFIX === undefined
      ? {}
      : {
          runSecrets: lazySubmittedRunSecrets(clients.secretsManager, env.RUN_SECRETS_PREFIX),
        }),
    ownerId: `lambda:${env.AWS_LAMBDA_FUNCTION_NAME ?? 'remote-worker'}:${randomUUID().slice(0, 8)}`,
    ecsContainerName: env.ECS_CONTAINER_NAME,
    unavailable,
  };
}

let coldStart: AwsDeps | undefined;

/** The process's dependencies, built from `process.env` on first use and kept for the life of the container. */
export function awsDeps(): AwsDeps {
  coldStart ??= buildAwsDeps(process.env);
  return coldStart;
}

/** `awsDeps()` plus what the API handlers need: API Gateway's verified caller identity. */
export function awsApiDeps(): ApiDeps & AwsDeps {
  const deps = awsDeps();
  return { ...deps, authenticate: apiGatewayAuthenticator() };
}
