/**
 * The relay agent as a standalone process, for an on-prem host in AWS mode:
 *
 *   RELAY_ID=dc1-relay RELAY_QUEUE_URL=https://sqs… RUNS_TABLE=remote-worker-runs \
 *   RELAY_ASSET_ROOT=/srv/playbooks node --import tsx runners/relay/main.ts
 *
 * It long-polls its SQS queue, claims runs in the DynamoDB runs table, runs
 * them with the process or docker executor, writes redacted output to
 * DynamoDB, and on SIGTERM (or SIGINT) stops taking work, lets running runs
 * finish for RELAY_DRAIN_SECONDS, and exits 0. Runs still going then are
 * adopted by the next start (keep RELAY_WORK_DIR). Environment: config.ts.
 * IAM: policy.ts.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { CloudClusterAuth } from '../../shared/adapters/cluster-auth/cluster-auth.ts';
import { DynamoLogStore } from '../../shared/adapters/dynamodb/log-store.ts';
import { DynamoRunStore } from '../../shared/adapters/dynamodb/run-store.ts';
import { DynamoTargetStore } from '../../shared/adapters/dynamodb/target-store.ts';
import { LocalAssetStore } from '../../shared/adapters/local/asset-store.ts';
import { dockerAvailable } from '../../shared/adapters/relay/docker-cli.ts';
import { DockerExecutor } from '../../shared/adapters/relay/docker-executor.ts';
import { ProcessExecutor } from '../../shared/adapters/relay/process-executor.ts';
import {
  SecretsManagerRunSecrets,
  submittedRunSecrets,
} from '../../shared/adapters/secrets-manager/run-secrets.ts';
import { SecretsManagerSecretSource } from '../../shared/adapters/secrets-manager/secret-source.ts';
import { SqsWorkQueue } from '../../shared/adapters/sqs/work-queue.ts';
import { lazyPasswordSafe } from '../../shared/composition/password-safe.ts';
import { loadSettings, type Settings } from '../../shared/config/settings.ts';
import { NotFoundError } from '../../shared/domain/errors.ts';
import type { AssetStore } from '../../shared/ports/asset-store.ts';
import { type Clock, systemClock } from '../../shared/ports/clock.ts';
import type { Executor } from '../../shared/ports/executor.ts';
import type { LogStore } from '../../shared/ports/log-store.ts';
import type { Logger } from '../../shared/ports/logger.ts';
import type { RunSecretStore } from '../../shared/ports/run-secret-store.ts';
import type { RunStore } from '../../shared/ports/run-store.ts';
import type { SecretSource } from '../../shared/ports/secret-source.ts';
import type { TargetStore } from '../../shared/ports/target-store.ts';
import type { WorkQueue } from '../../shared/ports/work-queue.ts';
import { RelayAgent } from './agent.ts';
import { loadRelayConfig, type RelayConfig } from './config.ts';

/** What the agent runs against; `awsAdapters` builds the production set, tests pass SQLite ones. */
export interface RelayAdapters {
  readonly store: RunStore;
  readonly targets: TargetStore;
  readonly queue: WorkQueue;
  readonly logs: LogStore;
  readonly secrets: SecretSource;
  /** Where the control plane keeps plaintext passwords for a run; the relay deletes them when its run ends. */
  readonly runSecrets?: RunSecretStore;
  readonly assets: AssetStore;
  readonly executor: Executor;
  readonly clock?: Clock;
}

/**
 * Only secrets under the relay's prefix are looked up; others are "not found"
 * (so the run fails naming the secret) instead of an IAM AccessDenied.
 */
function scopedSecrets(inner: SecretSource, prefix: string | undefined): SecretSource {
  if (prefix === undefined) return inner;
  return {
    get: (name) =>
      name.startsWith(prefix)
        ? inner.get(name)
        : Promise.reject(new NotFoundError(`Secret ${name} is outside this relay's prefix ${prefix}`)),
  };
}

/** The executor RELAY_EXECUTOR asks for; `auto` takes docker when an engine answers. */
async function chooseRelayExecutor(config: RelayConfig, logger: Logger): Promise<Executor> {
  const processExecutor = () =>
    new ProcessExecutor({
      // Stable across restarts, so the next start adopts (and only this relay reaps) its tasks.
      executorId: `relay-${config.relayId}`,
      ...(config.shimPath === undefined ? {} : { shimPath: config.shimPath }),
    });
  if (config.executor === 'process') return processExecutor();
  if (config.executor === 'docker' || (await dockerAvailable())) {
    return new DockerExecutor({
      assetRoot: config.assetRoot,
      executorId: `relay-${config.relayId}`,
      ...(config.shimPath === undefined ? {} : { shimPath: config.shimPath }),
    });
  }
  logger.info('relay: no Docker engine answers; using the process executor');
  return processExecutor();
}

/** The production adapters: DynamoDB runs and logs, the SQS relay queue, Secrets Manager, local assets. */
export async function awsAdapters(config: RelayConfig, logger: Logger): Promise<RelayAdapters> {
  return {
    store: new DynamoRunStore({ tableName: config.runsTable }),
    targets: new DynamoTargetStore({ tableName: config.runsTable }),
    queue: new SqsWorkQueue({ queueUrl: config.queueUrl }),
    logs: new DynamoLogStore({ tableName: config.logsTable }),
    secrets: new SecretsManagerSecretSource({}),
    // The control plane keeps plaintext passwords sent at submit under `<secrets prefix>runs/` (RUN_SECRETS_PREFIX).
    ...(config.secretPrefix === undefined
      ? {}
      : {
          runSecrets: submittedRunSecrets(
            new SecretsManagerRunSecrets({
              client: new SecretsManagerClient({}),
              prefix: `${config.secretPrefix}runs/`,
            }),
          ),
        }),
    assets: new LocalAssetStore({ root: config.assetRoot }),
    executor: await chooseRelayExecutor(config, logger),
  };
}

/**
 * The agent for a config and a set of adapters, not yet started.
 *
 * @example
 * const agent = buildRelay(loadRelayConfig(process.env), adapters, logger);
 * await agent.start();
 */
export function buildRelay(
  config: RelayConfig,
  adapters: RelayAdapters,
  logger: Logger,
  /** SSH key names, the Portainer connection and Password Safe (the same keys as the control plane). */
  settings?: Settings,
): RelayAgent {
  const secrets = scopedSecrets(adapters.secrets, config.secretPrefix);
  const credentials = settings === undefined ? undefined : lazyPasswordSafe(settings, secrets);
  return new RelayAgent({
    id: config.relayId,
    store: adapters.store,
    targets: adapters.targets,
    queue: adapters.queue,
    logs: adapters.logs,
    executor: adapters.executor,
    secrets,
    assets: adapters.assets,
    clock: adapters.clock ?? systemClock,
    logger,
    workRoot: config.workDir,
    concurrency: config.concurrency,
    pollWaitSeconds: config.pollWaitSeconds,
    clusterAuth: new CloudClusterAuth({ clock: adapters.clock ?? systemClock }),
    ...(settings === undefined ? {} : { settings }),
    ...(credentials === undefined ? {} : { credentials }),
    ...(adapters.runSecrets === undefined ? {} : { runSecrets: adapters.runSecrets }),
  });
}

/**
 * Start the agent and run until SIGTERM/SIGINT, then drain and resolve with
 * the exit code. Configuration errors are thrown before anything starts.
 */
export async function runRelay(
  env: Readonly<Record<string, string | undefined>>,
  options: { readonly adapters?: RelayAdapters } = {},
): Promise<number> {
  const config = loadRelayConfig(env);
  const settings = loadSettings({ env });
  const logger = new PowertoolsLogger({ serviceName: 'remote-worker-relay', logLevel: config.logLevel });
  const adapters = options.adapters ?? (await awsAdapters(config, logger));
  const agent = buildRelay(config, adapters, logger, settings);
  await agent.start();
  logger.info('relay started', {
    relayId: config.relayId,
    queue: adapters.queue.name,
    executor: adapters.executor.name,
    concurrency: config.concurrency,
  });

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  logger.info('relay draining: no new work is taken', {
    signal,
    running: agent.activeRunIds,
    drainSeconds: config.drainSeconds,
  });
  await agent.stop(config.drainSeconds * 1000);
  const left = agent.activeRunIds;
  logger.info('relay stopped', left.length === 0 ? {} : { leftForAdoption: left });
  return 0;
}

const isMain = (): boolean => {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
};

if (isMain()) {
  runRelay(process.env).then(
    (code) => process.exit(code),
    (error: unknown) => {
      // One line naming every configuration problem, or the start-up failure.
      console.error(`remote-worker relay: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
