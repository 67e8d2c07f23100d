import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ECSClient } from '@aws-sdk/client-ecs';
import { S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import { z } from 'zod';
import { CloudWatchLogReader } from '../adapters/cloudwatch-logs/log-reader.ts';
import { DynamoDiscoveryStore } from '../adapters/dynamodb/discovery-store.ts';
import { DynamoLaunchBudgets } from '../adapters/dynamodb/launch-budget.ts';
import { DynamoLogStore } from '../adapters/dynamodb/log-store.ts';
import { DynamoRunStore } from '../adapters/dynamodb/run-store.ts';
import { DynamoTargetStore } from '../adapters/dynamodb/target-store.ts';
import { RelayLauncher } from '../adapters/relay/relay-launcher.ts';
import { SecretsManagerRunSecrets, submittedRunSecrets } from '../adapters/secrets-manager/run-secrets.ts';
import { SecretsManagerSecretSource } from '../adapters/secrets-manager/secret-source.ts';
import { SqsWorkQueue } from '../adapters/sqs/work-queue.ts';
import type { AppDeps, RelayAvailability } from '../app/deps.ts';
import { prepareTask } from '../app/task-prep.ts';
import { loadSettings, type Settings } from '../config/settings.ts';
import { type FieldError, SettingsInvalidError } from '../domain/errors.ts';
import type { Run, Runner } from '../domain/run.ts';
import type { ApiDeps } from '../http/api-deps.ts';
import { apiGatewayAuthenticator } from '../http/api-gateway-auth.ts';
import { newId } from '../lib/ids.ts';
import { systemClock } from '../ports/clock.ts';
import type { Launchers } from '../ports/launcher.ts';
import { buildCloudSecretSources } from './cloud-secrets.ts';
import { buildStoredDiscovery } from './discovery.ts';
import { accountOfQueueUrl, buildLaunchGate } from './launch-budget.ts';
import { buildCloudLaunchers, lazyClusterAuth } from './launchers.ts';
import { lazyPasswordSafe } from './password-safe.ts';
import { buildAwsStorage } from './storage.ts';

/** Unset and empty are the same for an optional variable: `FOO=` in a template must not count as a value. */
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === '' ? undefined : value), schema.optional());

const queueUrl = z.url({
  protocol: /^https?$/,
  error: 'must be an SQS queue URL (https://sqs.…/account/name)',
});

const TASK_DEFINITIONS_FORMAT =
  'must be a JSON object mapping each runner image to its ECS task definition ({"chrweav/ansible-cloud": "remote-worker-ansible-cloud"})';

/** `ECS_TASK_DEFINITIONS`: JSON text, image → task definition family (or `family:revision`, or ARN). */
const taskDefinitions = z.string().transform((text, ctx): Record<string, string> => {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    ctx.addIssue({ code: 'custom', input: text, message: `${TASK_DEFINITIONS_FORMAT}; it is not JSON` });
    return z.NEVER;
  }
  const parsed = z.record(z.string().min(1), z.string().min(1)).safeParse(value);
  if (!parsed.success) {
    const where = parsed.error.issues.map((i) => i.path.join('.') || '(top level)').join(', ');
    ctx.addIssue({
      code: 'custom',
      input: text,
      message: `${TASK_DEFINITIONS_FORMAT}; bad entry at ${where}`,
    });
    return z.NEVER;
  }
  return parsed.data;
});

/**
 * The Lambda environment this composition root reads, validated once per cold
 * start. Settings (`ANSIBLE_RUNNER`, …) are read alongside by `loadSettings`.
 * The stack (infra/function-environment.ts) sets exactly these keys.
 */
export const AwsEnvironmentSchema = z.object({
  RUNS_TABLE: z.string().min(1, 'must name the DynamoDB runs table'),
  /** Where the relay writes its runs' output (runners/relay/config.ts); default RUNS_TABLE. */
  LOGS_TABLE: optional(z.string().min(1)),
  DISPATCH_QUEUE_URL: queueUrl,
  /** Unset: this deployment has no on-prem relay, and `local` runs are refused with a reason. */
  RELAY_QUEUE_URL: optional(queueUrl),
  ASSET_BUCKET: z.string().min(3, 'must name the S3 bucket holding assets'),
  ASSET_PREFIX: optional(z.string()),
  LOG_GROUP: z.string().min(1, 'must name the CloudWatch Logs group runs write to'),
  /** Unset: the `ecs` runner is not available (with the cluster and subnet settings, see `launcherFactories`). */
  ECS_TASK_DEFINITIONS: optional(taskDefinitions),
  /** The runner container in every task definition: overridden by this name, its exit code is the run's. */
  ECS_CONTAINER_NAME: optional(z.string().min(1)).transform((v) => v ?? 'runner'),
  /** The awslogs `streamPrefix` of the runner container: streams are `<prefix>/<container>/<task id>`. */
  ECS_LOG_STREAM_PREFIX: optional(z.string().min(1)).transform((v) => v ?? 'run'),
  /**
   * Secrets Manager name prefix for values minted for one run (token-prepared
   * kubeconfigs, checked-out logins); unset, ECS refuses runs that need them.
   */
  RUN_SECRETS_PREFIX: optional(
    z.string().regex(/^[A-Za-z0-9/_+=.@-]{1,400}$/, 'must be a Secrets Manager name prefix'),
  ),
  /** Family prefix of the per-run task definitions (runs with secrets); the launcher's default when unset. */
  ECS_TASK_FAMILY_PREFIX: optional(
    z.string().regex(/^[A-Za-z0-9_-]{1,200}$/, 'must be letters, digits, - and _'),
  ),
  LOG_LEVEL: optional(
    z
      .string()
      .transform((s) => s.toUpperCase())
      .pipe(z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'])),
  ),
  /** Set by Lambda; part of the dispatcher's owner id so a claim says which function holds it. */
  AWS_LAMBDA_FUNCTION_NAME: optional(z.string()),
  /** An emulator (moto, LocalStack, MinIO) serves S3 path-style only. */
  AWS_ENDPOINT_URL: optional(z.string()),
  AWS_ENDPOINT_URL_S3: optional(z.string()),
});

export type AwsEnvironment = z.infer<typeof AwsEnvironmentSchema>;

/** What each required variable holds, for the message when it is missing. */
const REQUIRED: Readonly<Record<string, string>> = {
  RUNS_TABLE: 'the DynamoDB runs table name',
  DISPATCH_QUEUE_URL: 'the dispatch SQS queue URL',
  ASSET_BUCKET: 'the S3 bucket holding assets',
  LOG_GROUP: 'the CloudWatch Logs group run output goes to',
};

/**
 * Read the environment and the settings together and report every problem
 * at once: one SettingsInvalidError naming each bad variable and setting.
 *
 * @example
 * const { env, settings } = readAwsEnvironment(process.env);
 */
export function readAwsEnvironment(source: Readonly<Record<string, string | undefined>>): {
  env: AwsEnvironment;
  settings: Settings;
} {
  const problems: FieldError[] = [];
  const parsed = AwsEnvironmentSchema.safeParse(source);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = issue.path.join('.') || '(environment)';
      const missing = source[name] === undefined || source[name] === '';
      problems.push({
        path: name,
        message: missing ? `is not set: give ${REQUIRED[name] ?? 'a value'}` : issue.message,
      });
    }
  }
  let settings: Settings | undefined;
  try {
    settings = loadSettings({ env: source });
  } catch (error) {
    if (!(error instanceof SettingsInvalidError)) throw error;
    problems.push(...error.problems);
  }
  if (!parsed.success || settings === undefined || problems.length > 0) {
    throw new SettingsInvalidError(problems);
  }
  return { env: parsed.data, settings };
}

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
 * Powertools logger, and a launcher per configured backend. Creates the SDK
 * clients (which honour AWS_REGION and AWS_ENDPOINT_URL) and makes no call.
 *
 * @example
 * const deps = buildAwsDeps(process.env);
 * export const handler = makeDispatchRuns(deps);
 */
export function buildAwsDeps(source: Readonly<Record<string, string | undefined>>): AwsDeps {
  const { env, settings } = readAwsEnvironment(source);
  const logger = new Logger({ serviceName: 'remote-worker', logLevel: env.LOG_LEVEL ?? 'INFO' });
  const clock = systemClock;
  const clients = {
    dynamodb: new DynamoDBClient({}),
    sqs: new SQSClient({}),
    s3: new S3Client({
      forcePathStyle: env.AWS_ENDPOINT_URL_S3 !== undefined || env.AWS_ENDPOINT_URL !== undefined,
    }),
    logs: new CloudWatchLogsClient({}),
    ecs: new ECSClient({}),
    secretsManager: new SecretsManagerClient({}),
  };
  const store = new DynamoRunStore({ client: clients.dynamodb, tableName: env.RUNS_TABLE, clock });
  const targets = new DynamoTargetStore({ client: clients.dynamodb, tableName: env.RUNS_TABLE });

  const logStreams: Partial<Record<Runner, (run: Run) => string | undefined>> = {};
  const logs = new CloudWatchLogReader({
    client: clients.logs,
    logGroup: env.LOG_GROUP,
    streamFor: async (runId) => {
      const run = await store.getRun(runId);
      const backend = run?.launch?.backend;
      return run === undefined || backend === undefined ? undefined : logStreams[backend]?.(run);
    },
  });

  const storage = buildAwsStorage({
    settings,
    client: clients.s3,
    bucket: env.ASSET_BUCKET,
    ...(env.ASSET_PREFIX === undefined ? {} : { prefix: env.ASSET_PREFIX }),
  });
  const assets = storage.assets;

  const secrets = new SecretsManagerSecretSource({ client: clients.secretsManager, clock });
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
  const runLogs = new DynamoLogStore({
    client: clients.dynamodb,
    tableName: env.LOGS_TABLE ?? env.RUNS_TABLE,
    clock,
  });
  const cloud = buildCloudLaunchers({
    settings,
    clients: { ecs: () => clients.ecs, secretsManager: () => clients.secretsManager },
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
    prepare: (run, options) =>
      prepareTask(
        {
          store,
          targets,
          assets,
          storage,
          startDeadlineSeconds: settings.start_deadline_seconds,
          secrets,
          ...material,
        },
        run,
        options,
      ),
    runLogs,
  });
  Object.assign(logStreams, cloud.logStreams);
  const launchers: Launchers = { ...cloud.launchers };
  const unavailable: Partial<Record<Runner, string>> = { ...cloud.unavailable };
  if (env.RELAY_QUEUE_URL === undefined) {
    unavailable.local = 'this deployment has no on-prem relay (RELAY_QUEUE_URL is not set)';
  } else {
    launchers.local = new RelayLauncher(
      new SqsWorkQueue({ client: clients.sqs, queueUrl: env.RELAY_QUEUE_URL }),
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
    dispatchQueue: new SqsWorkQueue({ client: clients.sqs, queueUrl: env.DISPATCH_QUEUE_URL }),
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
    ),
    // Plaintext passwords sent at submit, kept under RUN_SECRETS_PREFIX until their run ends.
    ...(env.RUN_SECRETS_PREFIX === undefined
      ? {}
      : {
          runSecrets: submittedRunSecrets(
            new SecretsManagerRunSecrets({ client: clients.secretsManager, prefix: env.RUN_SECRETS_PREFIX }),
          ),
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
