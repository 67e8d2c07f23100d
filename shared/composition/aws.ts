import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ECSClient } from '@aws-sdk/client-ecs';
import { S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { TokenCredential } from '@azure/identity';
import { z } from 'zod';
import type { ApiDeps } from '../../functions/api/deps.ts';
import { AciLauncher, aciOptionsFromSettings } from '../adapters/aci/launcher.ts';
import { CloudRunLauncher, cloudRunOptionsFromSettings } from '../adapters/cloud-run/launcher.ts';
import { awslogsStreamName, CloudWatchLogReader } from '../adapters/cloudwatch-logs/log-reader.ts';
import { DynamoLogStore } from '../adapters/dynamodb/log-store.ts';
import { DynamoRunStore } from '../adapters/dynamodb/run-store.ts';
import { parseEcsHandle } from '../adapters/ecs/handle.ts';
import { EcsLauncher, ecsNetworkFromSettings } from '../adapters/ecs/launcher.ts';
import { describeSecretArn } from '../adapters/ecs/secret-arn.ts';
import { RelayLauncher } from '../adapters/relay/relay-launcher.ts';
import { S3AssetStore } from '../adapters/s3/asset-store.ts';
import { SecretsManagerRunSecrets } from '../adapters/secrets-manager/run-secrets.ts';
import { SecretsManagerSecretSource } from '../adapters/secrets-manager/secret-source.ts';
import { SqsWorkQueue } from '../adapters/sqs/work-queue.ts';
import type { AppDeps, RelayAvailability } from '../app/deps.ts';
import { type PreparedTask, prepareTask } from '../app/task-prep.ts';
import { loadSettings, type Settings } from '../config/settings.ts';
import {
  type FieldError,
  LauncherUnavailableError,
  LaunchRejectedError,
  RunnerNotConfiguredError,
  SettingsInvalidError,
} from '../domain/errors.ts';
import type { Run, Runner } from '../domain/run.ts';
import { apiGatewayAuthenticator } from '../http/api-gateway-auth.ts';
import { newId } from '../ids.ts';
import type { AssetStore } from '../ports/asset-store.ts';
import { type Clock, systemClock } from '../ports/clock.ts';
import type { ClusterAuth } from '../ports/cluster-auth.ts';
import type { Launcher, Launchers } from '../ports/launcher.ts';
import type { LogReader, LogStore } from '../ports/log-store.ts';
import type { RunStore } from '../ports/run-store.ts';
import type { SecretSource } from '../ports/secret-source.ts';
import { lazyLauncher } from './lazy-launcher.ts';
import { lazyPasswordSafe } from './password-safe.ts';

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

/** The AWS SDK clients, one each per cold start. */
interface AwsClients {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly s3: S3Client;
  readonly logs: CloudWatchLogsClient;
  readonly ecs: ECSClient;
  readonly secretsManager: SecretsManagerClient;
}

/** What a backend's factory may use to build its launcher. */
interface LauncherContext {
  readonly env: AwsEnvironment;
  readonly settings: Settings;
  readonly clients: AwsClients;
  readonly store: RunStore;
  readonly assets: AssetStore;
  /** Output of every backend that writes to LOG_GROUP. */
  readonly logs: LogReader;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Secret values, for backends that take values (ACI, Kubernetes) and for connection material. */
  readonly secrets: SecretSource;
  /** `prepareTask` over this deployment's stores, secrets, token preparation and checkouts. */
  readonly prepare: (run: Run, options?: { readonly resolveSecrets?: boolean }) => Promise<PreparedTask>;
  /**
   * Run output the control plane keeps itself (LOGS_TABLE, default RUNS_TABLE): what the relay
   * writes, and what ACI and Kubernetes runs leave before their objects are deleted.
   */
  readonly runLogs: LogStore;
}

/** A backend as this deployment runs it. */
interface Backend {
  readonly launcher: Launcher;
  /** The LOG_GROUP stream holding a run's output on this backend (e.g. the task's awslogs stream). */
  readonly logStream?: (run: Run) => string | undefined;
}

/** Builds a backend, or answers why this deployment does not have it. */
type LauncherFactory = (context: LauncherContext) => Backend | { readonly unavailable: string };

/**
 * The runners this deployment can launch:
 * - `local`: the on-prem relay, through RELAY_QUEUE_URL; its output is what the
 *   relay wrote to DynamoDB (LOGS_TABLE, default RUNS_TABLE);
 * - `ecs`: one Fargate task per run on `ansible_ecs_cluster`, in
 *   `ansible_ecs_subnet_id`, from the task definitions in ECS_TASK_DEFINITIONS;
 *   its output is the task's awslogs stream in LOG_GROUP (`logStream`).
 * A runner with no entry, or whose factory answers `unavailable`, is refused
 * at submit with a message saying it is not available in this deployment.
 */
const launcherFactories: Partial<Record<Runner, LauncherFactory>> = {
  local: ({ env, clients, runLogs }) =>
    env.RELAY_QUEUE_URL === undefined
      ? { unavailable: 'this deployment has no on-prem relay (RELAY_QUEUE_URL is not set)' }
      : {
          launcher: new RelayLauncher(
            new SqsWorkQueue({ client: clients.sqs, queueUrl: env.RELAY_QUEUE_URL }),
            // Where the relay writes its output (runners/relay/config.ts: LOGS_TABLE, default RUNS_TABLE).
            runLogs,
          ),
        },
  ecs: ({ env, settings, clients, logs, prepare }) => {
    const cluster = settings.ansible_ecs_cluster;
    const network = ecsNetworkFromSettings(settings);
    const definitions = env.ECS_TASK_DEFINITIONS ?? {};
    const missing = [
      ...(cluster === undefined ? ['ansible_ecs_cluster'] : []),
      ...(network === undefined ? ['ansible_ecs_subnet_id'] : []),
      ...(Object.keys(definitions).length === 0 ? ['ECS_TASK_DEFINITIONS'] : []),
    ];
    if (cluster === undefined || network === undefined || missing.length > 0) {
      return { unavailable: `ECS is not configured in this deployment (${missing.join(', ')} not set)` };
    }
    const container = env.ECS_CONTAINER_NAME;
    return {
      launcher: new EcsLauncher({
        ecs: clients.ecs,
        cluster,
        taskDefinitions: definitions,
        containerName: container,
        network,
        // ECS fetches stored secrets itself, with the task's execution role: the dispatcher only describes them.
        // Reading stays possible for material minted here (an EKS kubeconfig needs the stored one first).
        prepare: (run) => prepare(run, { resolveSecrets: false }),
        secretArn: describeSecretArn(clients.secretsManager),
        ...(env.RUN_SECRETS_PREFIX === undefined
          ? {}
          : {
              runSecrets: new SecretsManagerRunSecrets({
                client: clients.secretsManager,
                prefix: env.RUN_SECRETS_PREFIX,
              }),
            }),
        logs,
        ...(env.ECS_TASK_FAMILY_PREFIX === undefined
          ? {}
          : { perRunFamilyPrefix: env.ECS_TASK_FAMILY_PREFIX }),
      }),
      logStream: (run) => {
        const handle = parseEcsHandle(run.launch?.handle);
        return handle === undefined
          ? undefined
          : awslogsStreamName(env.ECS_LOG_STREAM_PREFIX, container, handle.taskArn);
      },
    };
  },
  aci: ({ settings, clock, secrets, prepare, runLogs }) => {
    let aci: ReturnType<typeof aciOptionsFromSettings>;
    try {
      aci = aciOptionsFromSettings(settings);
    } catch (error) {
      if (error instanceof RunnerNotConfiguredError) return { unavailable: error.message };
      throw error;
    }
    if (aci === undefined)
      return { unavailable: 'ACI is not configured in this deployment (azure_resource_group not set)' };
    const registry = aci.registry;
    const { subscriptionId } = aci;
    return {
      // A constant in bundles built without cloud SDKs (infra/bundling.ts): esbuild drops the loader.
      launcher: lazyLauncher(
        'aci',
        process.env.RW_CLOUD_SDKS === 'none'
          ? withoutCloudSdks('aci')
          : async () => {
              const [{ ContainerInstanceManagementClient }, { defaultAzureCredential }] = await Promise.all([
                import('@azure/arm-containerinstance'),
                import('../adapters/cluster-auth/aks-token.ts'),
              ]);
              /** `DefaultAzureCredential`, made on first use. */
              const azureCredential = (): TokenCredential => ({
                getToken: async (scopes, options) =>
                  (await defaultAzureCredential()).getToken(scopes, options),
              });
              return new AciLauncher({
                // Service principal, workload identity federation or managed identity, from AZURE_* variables.
                aci: new ContainerInstanceManagementClient(azureCredential(), subscriptionId),
                resourceGroup: aci.resourceGroup,
                location: aci.location,
                subnetIds: aci.subnetIds,
                ...(registry === undefined
                  ? {}
                  : {
                      registry: {
                        server: registry.server,
                        username: registry.username,
                        password: () => secrets.get(registry.passwordSecret),
                      },
                    }),
                // ACI takes values (secureValue), not references: the dispatcher resolves them.
                prepare: (run) => prepare(run),
                archive: runLogs,
                clock,
              });
            },
      ),
    };
  },
  kubernetes: ({ settings, clock, prepare, runLogs }) => {
    // Lambda is never in a cluster: kubernetes_kubeconfig must name a kubeconfig file (token or certificate, no exec).
    if (settings.kubernetes_kubeconfig === undefined) {
      return {
        unavailable:
          'Kubernetes pod runner is not configured: set kubernetes_kubeconfig (the control plane is not running in a cluster)',
      };
    }
    return {
      launcher: lazyLauncher(
        'kubernetes',
        process.env.RW_CLOUD_SDKS === 'none'
          ? withoutCloudSdks('kubernetes')
          : async () => {
              const built = (await import('./kubernetes.ts')).buildKubernetesLauncher({
                settings,
                env: {},
                archive: runLogs,
                clock,
                prepare: (run) => prepare(run),
              });
              if ('unavailable' in built) throw new LaunchRejectedError(built.unavailable);
              return built.launcher;
            },
      ),
    };
  },
  gcp: ({ settings, prepare }) => {
    let gcp: ReturnType<typeof cloudRunOptionsFromSettings>;
    try {
      gcp = cloudRunOptionsFromSettings(settings);
    } catch (error) {
      if (error instanceof RunnerNotConfiguredError) return { unavailable: error.message };
      throw error;
    }
    return {
      launcher: lazyLauncher(
        'gcp',
        process.env.RW_CLOUD_SDKS === 'none'
          ? withoutCloudSdks('gcp')
          : async () => {
              const [{ ExecutionsClient, JobsClient, TasksClient }, { GoogleAuth }] = await Promise.all([
                import('@google-cloud/run'),
                import('google-auth-library'),
              ]);
              // Application Default Credentials (on Lambda: GOOGLE_APPLICATION_CREDENTIALS → workload identity federation).
              const auth = new GoogleAuth({ scopes: ['https://www.googleapis.com/auth/cloud-platform'] });
              return new CloudRunLauncher({
                ...gcp,
                jobs: new JobsClient({ fallback: true, auth }),
                executions: new ExecutionsClient({ fallback: true, auth }),
                tasks: new TasksClient({ fallback: true, auth }),
                http: auth,
                // Cloud Run resolves stored secrets from Secret Manager itself; only minted material reaches secretEnv.
                prepare: (run) => prepare(run, { resolveSecrets: false }),
              });
            },
      ),
    };
  },
};

/** What a function built without the cloud SDKs answers if it is ever asked to act on such a task. */
const withoutCloudSdks = (what: string) => (): Promise<never> =>
  Promise.reject(
    new LauncherUnavailableError(
      `This function is bundled without the ${what} SDK (infra/handlers.ts controlsTasks); the dispatcher, poller and reconciler act on these tasks`,
    ),
  );

/**
 * Kubeconfig token preparation, loaded on first use (only the dispatcher
 * prepares tasks); left out of bundles built without the cloud SDKs.
 */
function lazyClusterAuth(clock: Clock): ClusterAuth {
  let auth: Promise<ClusterAuth> | undefined;
  const load =
    process.env.RW_CLOUD_SDKS === 'none'
      ? withoutCloudSdks('cluster token')
      : () =>
          import('../adapters/cluster-auth/cluster-auth.ts').then((m) => new m.CloudClusterAuth({ clock }));
  return {
    prepare: async (target, stored) => {
      auth ??= load().catch((error: unknown) => {
        auth = undefined;
        throw error;
      });
      return (await auth).prepare(target, stored);
    },
  };
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
  const clients: AwsClients = {
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

  const assets = new S3AssetStore({
    client: clients.s3,
    bucket: env.ASSET_BUCKET,
    prefix: env.ASSET_PREFIX ?? '',
  });

  const secrets = new SecretsManagerSecretSource({ client: clients.secretsManager, clock });
  const credentials = lazyPasswordSafe(settings, secrets);
  const material = {
    settings,
    clusterAuth: lazyClusterAuth(clock),
    ...(credentials === undefined ? {} : { credentials }),
  };
  const context: LauncherContext = {
    env,
    settings,
    clients,
    store,
    assets,
    logs,
    clock,
    logger,
    secrets,
    prepare: (run, options) => prepareTask({ store, assets, secrets, ...material }, run, options),
    runLogs: new DynamoLogStore({
      client: clients.dynamodb,
      tableName: env.LOGS_TABLE ?? env.RUNS_TABLE,
      clock,
    }),
  };
  const launchers: Record<string, Launcher> = {};
  const unavailable: Partial<Record<Runner, string>> = {};
  for (const [runner, factory] of Object.entries(launcherFactories) as [Runner, LauncherFactory][]) {
    const built = factory(context);
    if ('unavailable' in built) {
      unavailable[runner] = built.unavailable;
      logger.debug('runner not available', { runner, reason: built.unavailable });
      continue;
    }
    launchers[runner] = built.launcher;
    if (built.logStream !== undefined) logStreams[runner] = built.logStream;
  }
  const relay: RelayAvailability =
    launchers.local === undefined
      ? { available: false, reason: unavailable.local ?? 'no relay launcher is registered' }
      : { available: true };

  return {
    store,
    dispatchQueue: new SqsWorkQueue({ client: clients.sqs, queueUrl: env.DISPATCH_QUEUE_URL }),
    logs,
    assets,
    settings,
    launchers: launchers as Launchers,
    relay,
    clock,
    newId: () => newId(clock.nowMs()),
    logger,
    ...(credentials === undefined ? {} : { credentials }),
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
