import { mkdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import { API_ROUTES } from '../../functions/api/routes.ts';
import { makeDispatchRuns } from '../../functions/dispatcher/dispatch-runs.ts';
import { makeSettleDeadLetters } from '../../functions/dispatcher/settle-dead-letters.ts';
import {
  type EcsTaskStateChangeEvent,
  makeEcsTaskStateChange,
} from '../../functions/status-sync/ecs-task-state-change.ts';
import { RelayAgent } from '../../runners/relay/agent.ts';
import { FileRunSecretStore, withRunSecrets } from '../../shared/adapters/local/run-secrets.ts';
import { FileSecretSource } from '../../shared/adapters/local/secret-source.ts';
import { RelayLauncher } from '../../shared/adapters/relay/relay-launcher.ts';
import { closeDatabase, openDatabase } from '../../shared/adapters/sqlite/database.ts';
import { withDurableReads } from '../../shared/adapters/sqlite/durable-reads.ts';
import { SqliteLaunchSlots } from '../../shared/adapters/sqlite/launch-slots.ts';
import { SqliteLogStore } from '../../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../shared/adapters/sqlite/target-store.ts';
import { SqliteWorkQueue } from '../../shared/adapters/sqlite/work-queue.ts';
import type { AppDeps } from '../../shared/app/deps.ts';
import { BackendPoller, POLLED_BACKENDS, pollerOptionsFrom } from '../../shared/app/poll-backends.ts';
import { reconcileRuns } from '../../shared/app/reconcile.ts';
import { prepareTask } from '../../shared/app/task-prep.ts';
import { buildDiscovery } from '../../shared/composition/discovery.ts';
import { buildLaunchGate } from '../../shared/composition/launch-budget.ts';
import { buildLocalCloudLaunchers, LOCAL_ECS_CONTAINER } from '../../shared/composition/local-launchers.ts';
import { buildLocalStorage } from '../../shared/composition/local-storage.ts';
import { lazyPasswordSafe } from '../../shared/composition/password-safe.ts';
import { taskPrepDeps } from '../../shared/composition/task-prep-deps.ts';
import { loadSettings, type Settings, selectedRunners } from '../../shared/config/settings.ts';
import { isTerminal, type Runner } from '../../shared/domain/run.ts';
import type { HttpHandler } from '../../shared/http/handler.ts';
import { newId } from '../../shared/lib/ids.ts';
import { onFirstUse } from '../../shared/lib/on-first-use.ts';
import type { Clock } from '../../shared/ports/clock.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import type { ClusterAuth } from '../../shared/ports/cluster-auth.ts';
import type { Executor } from '../../shared/ports/executor.ts';
import type { Launchers } from '../../shared/ports/launcher.ts';
import type { Logger } from '../../shared/ports/logger.ts';
import { localAssetRoot } from './asset-root.ts';
import { bearerAuthenticator, ensureToken } from './auth-token.ts';
import { chooseExecutor } from './executor-choice.ts';
import { closeApiServer, createApiServer } from './http-server.ts';
import { QueuePump } from './queue-pump.ts';
import { loadStaticSite } from './static-site.ts';

/** The clouds' own secret stores for VM SSH keys, their composition (and SDK loaders) loaded only when set. */
async function cloudSecretSources(settings: Settings) {
  if (settings.gcp_project_id === undefined && settings.azure_key_vault_url === undefined) return {};
  const { buildCloudSecretSources } = await import('../../shared/composition/cloud-secrets.ts');
  return buildCloudSecretSources(settings);
}

/** The built web console (`npm run build --prefix console`), served at `/` when present. */
const CONSOLE_DIST = resolve(import.meta.dirname, '../../console/dist');

/** The relay keeps a message while its run executes; only a run that keeps bouncing dead-letters. */
const RELAY_MAX_RECEIVES = 100;

export interface LocalModeOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Directory relative paths (data dir, storage root) are resolved against. */
  readonly cwd?: string;
  readonly clock?: Clock;
  /** Replace the executor choice (tests, benchmarks). */
  readonly executor?: Executor;
  /** How often the reconciler sweeps (default 15 s). */
  readonly reconcileEverySeconds?: number;
  /** Every SQL statement the database runs (tests count commits with it); see openDatabase. */
  readonly traceSql?: (sql: string) => void;
}

export interface LocalMode {
  readonly url: string;
  readonly token: string;
  /** True when the token was made now: print it once. */
  readonly tokenCreated: boolean;
  readonly dataDir: string;
  readonly executorName: string | undefined;
  readonly logger: Logger;
  /** The runners this local mode can launch (`local` is the in-process relay). */
  readonly runners: readonly Runner[];
  /** `ansible_ecs_cluster` when the ECS runner is built: where an emulator's task stand-in looks. */
  readonly ecsCluster?: string;
  /**
   * The status-sync entry for "ECS Task State Change" events, when the ECS runner is built. Local mode
   * has no EventBridge: it polls ECS itself, and an emulator's task stand-in may push events here.
   */
  readonly ecsTaskStateChange?: (event: EcsTaskStateChangeEvent) => Promise<unknown>;
  close(options?: { drainMs?: number }): Promise<void>;
}

/**
 * Local mode: the production handlers over HTTP, the dispatcher fed from a
 * SQLite queue, and the relay in-process — one SQLite file for runs, queues
 * and logs under REMOTE_WORKER_DATA_DIR. A restart, even after `kill -9`,
 * picks up every accepted run: queued messages survive in the file, in-flight
 * ones are released at once, and the relay adopts the tasks it left running.
 *
 * @example
 * const local = await startLocalMode({ env: process.env });
 * console.log(local.url, local.token);
 */
export async function startLocalMode(options: LocalModeOptions = {}): Promise<LocalMode> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const clock = options.clock ?? systemClock;
  const settings = loadSettings({ env });
  const logger: Logger = new PowertoolsLogger({
    serviceName: 'remote-worker',
    logLevel: (env.LOG_LEVEL ?? 'INFO').toUpperCase() as 'INFO',
  });

  const dataDir = resolve(cwd, env.REMOTE_WORKER_DATA_DIR || '.remote-worker');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const { token, created } = await ensureToken(dataDir, env.REMOTE_WORKER_TOKEN);

  const db = openDatabase(
    join(dataDir, 'remote-worker.db'),
    options.traceSql === undefined ? {} : { trace: options.traceSql },
  );
  const store = new SqliteRunStore({ db, clock });
  const targets = new SqliteTargetStore({ db });
  const logs = new SqliteLogStore({ db, clock });
  const dispatchDlq = new SqliteWorkQueue({ db, name: 'dispatch-dlq', visibilityTimeoutSeconds: 30, clock });
  const dispatchQueue = new SqliteWorkQueue({
    db,
    name: 'dispatch',
    visibilityTimeoutSeconds: 30,
    maxReceiveCount: settings.dispatch_max_receive_count,
    deadLetter: dispatchDlq,
    clock,
    // The submit has nothing left to do but wait for its fsync (group-commit.ts): the dispatcher's receive goes
    // on at once, within the submit's turn, so its steps and the relay's claim are committed before that fsync
    // begins, and it covers them.
    wakeAtOnce: true,
  });
  const relayDlq = new SqliteWorkQueue({ db, name: 'relay-dlq', visibilityTimeoutSeconds: 30, clock });
  const relayQueue = new SqliteWorkQueue({
    db,
    name: 'relay',
    visibilityTimeoutSeconds: 60,
    maxReceiveCount: RELAY_MAX_RECEIVES,
    deadLetter: relayDlq,
    clock,
    // Sent by the dispatcher between a local run's claim and its "launched", which the relay's durable claim
    // follows before anything starts: lost to a power cut with those, it is sent again (sqlite/durability.ts).
    fsyncSends: false,
    // The dispatcher's send is its last step the relay needs (the relay claims from the version the message
    // carries, with or without the dispatcher's "launched" write: shared/domain/relay-claim.ts), so the relay's
    // receive and claim go ahead of that write and the dispatch message's acknowledgement, within the turn.
    wakeAtOnce: true,
  });
  // Local mode is the only consumer of these queues: nothing is in flight across a restart.
  for (const q of [dispatchQueue, dispatchDlq, relayQueue, relayDlq]) q.releaseInFlight();

  // Plaintext passwords sent at submit live in per-run files beside secrets.json, never in the SQLite file.
  const runSecrets = new FileRunSecretStore({ dataDir });
  const secrets = withRunSecrets(new FileSecretSource({ dataDir }), runSecrets);
  // Before the API listens (no submit is between writing a value and recording its run): what a crash left.
  const swept = await runSecrets.sweep(async (runId) => {
    const run = await store.getRun(runId);
    return run === undefined || isTerminal(run.state);
  });
  if (swept.length > 0) logger.warn('removed per-run secrets of runs that had ended', { runIds: swept });
  const assetRoot = await localAssetRoot({ settings, cwd, dataDir });
  const storage = buildLocalStorage({ settings, secrets, assetRoot });
  const assets = storage.assets;
  const choice = options.executor
    ? { executor: options.executor }
    : await chooseExecutor(settings.local_executor, {
        dataDir,
        assetRoot,
        dockerCli: settings.local_docker_cli,
        ...(settings.local_docker_volumes === undefined
          ? {}
          : { dockerVolumes: settings.local_docker_volumes }),
      });

  const clusterAuth = lazyClusterAuth(clock);
  const credentials = lazyPasswordSafe(settings, secrets);
  const discovery = buildDiscovery({ settings, env, clock, logger });
  const material = {
    settings,
    clusterAuth,
    cloudSecrets: await cloudSecretSources(settings),
    ...(credentials === undefined ? {} : { credentials }),
    ...(discovery === undefined ? {} : { discovery: discovery.cache }),
  };
  const prepareDeps = taskPrepDeps({ store, targets, assets, storage, secrets, clock, ...material });
  const launchers: Launchers = {
    ...(await buildLocalCloudLaunchers({ settings, store, logs, clock, logger, secrets, prepareDeps })),
    ...(choice.executor === undefined ? {} : { local: new RelayLauncher(relayQueue, logs) }),
  };
  if (selectedRunners(settings).has('kubernetes')) {
    // Loaded only here: @kubernetes/client-node alone is most of an idle local mode's memory.
    const { buildKubernetesLauncher, collectKubernetesOrphans } = await import(
      '../../shared/composition/kubernetes.ts'
    );
    const built = buildKubernetesLauncher({
      settings,
      env,
      archive: logs,
      clock,
      prepare: (run) => prepareTask(prepareDeps, run),
    });
    if ('launcher' in built) {
      launchers.kubernetes = built.launcher;
      await collectKubernetesOrphans(built.launcher, store, logger);
    } else {
      logger.warn('the kubernetes runner is selected but not available', { reason: built.unavailable });
    }
  }

  const deps: AppDeps = {
    store,
    targets,
    dispatchQueue,
    logs,
    assets,
    storage,
    settings,
    launchers,
    relay:
      choice.executor === undefined
        ? { available: false, reason: choice.reason ?? 'no executor is available' }
        : { available: true },
    clock,
    newId: () => newId(clock.nowMs()),
    logger,
    ...(credentials === undefined ? {} : { credentials }),
    runSecrets,
    ...(discovery === undefined ? {} : { discovery: discovery.cache }),
    // Launch budgets for the cloud launchers this process drives, kept in the process.
    launchBudget: buildLaunchGate(
      settings,
      { region: env.AWS_REGION },
      undefined,
      new SqliteLaunchSlots({ db }),
    ),
  };
  // Clients read only what is durable; the dispatcher and the relay read the store as it is (durable-reads.ts).
  const apiDeps = {
    ...deps,
    store: withDurableReads(store, db),
    authenticate: bearerAuthenticator(token),
    logger,
  };
  const handlers: Record<string, HttpHandler> = {};
  for (const [key, make] of Object.entries(API_ROUTES)) handlers[key] = make(apiDeps);

  const site = loadStaticSite(CONSOLE_DIST);
  if (site === undefined) {
    logger.warn('the web console is not built; `/` serves nothing', {
      build: 'npm run build --prefix console',
    });
  }
  const server = createApiServer(handlers, {
    authenticate: apiDeps.authenticate,
    logger,
    ...(site === undefined ? {} : { site }),
  });
  const host = env.HOST || '127.0.0.1';
  const port = Number(env.PORT || 8080);
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => ok());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;

  const pumps = [
    new QueuePump(
      dispatchQueue,
      makeDispatchRuns({ ...deps, ownerId: `local-dispatcher:${process.pid}` }),
      logger,
    ),
    new QueuePump(dispatchDlq, makeSettleDeadLetters(deps), logger),
    new QueuePump(relayDlq, makeSettleDeadLetters(deps, RELAY_MAX_RECEIVES), logger),
  ];
  for (const pump of pumps) pump.start();

  let relay: RelayAgent | undefined;
  if (choice.executor !== undefined) {
    relay = new RelayAgent({
      id: 'local',
      store,
      targets,
      queue: relayQueue,
      logs,
      executor: choice.executor,
      secrets,
      assets,
      storage,
      startDeadlineSeconds: settings.start_deadline_seconds,
      clock,
      logger,
      workRoot: join(dataDir, 'work'),
      concurrency: settings.relay_concurrency,
      pollWaitSeconds: 1,
      runSecrets,
      ...material,
    });
    await relay.start();
  }

  const reconcile = () =>
    reconcileRuns(deps, { requeueAfterSeconds: 60, deadlineGraceSeconds: 60 }).catch((error: unknown) =>
      logger.error('reconcile failed', { error: error as Error }),
    );
  const reconcileTimer = setInterval(reconcile, (options.reconcileEverySeconds ?? 15) * 1000);
  reconcileTimer.unref();

  // Backends without push events (Kubernetes here) are polled every poll_interval_seconds.
  // ECS pushes no events to local mode (no EventBridge rule reaches it): it is polled like the others.
  const poller = new BackendPoller(deps, {
    ...pollerOptionsFrom(settings),
    backends: [...POLLED_BACKENDS, 'ecs'],
  });
  const polling = poller.start();

  logger.info('local mode started', { url, dataDir, assetRoot, executor: choice.executor?.name ?? 'none' });

  return {
    url,
    token,
    tokenCreated: created,
    dataDir,
    executorName: choice.executor?.name,
    runners: Object.keys(launchers) as Runner[],
    ...(launchers.ecs === undefined || settings.ansible_ecs_cluster === undefined
      ? {}
      : {
          ecsCluster: settings.ansible_ecs_cluster,
          ecsTaskStateChange: makeEcsTaskStateChange({ ...deps, containerName: LOCAL_ECS_CONTAINER }),
        }),
    logger,
    async close({ drainMs = 10_000 } = {}) {
      clearInterval(reconcileTimer);
      discovery?.stop();
      await polling?.stop();
      await closeApiServer(server);
      await Promise.all(pumps.map((p) => p.stop()));
      await relay?.stop(drainMs);
      closeDatabase(db);
    },
  };
}

/**
 * Kubeconfig token preparation (the EKS signer, the Azure and Google token
 * providers, a YAML parser), loaded the first time a Kubernetes run is
 * prepared rather than at every start.
 */
function lazyClusterAuth(clock: Clock): ClusterAuth {
  const auth = onFirstUse(async () => {
    const { CloudClusterAuth } = await import('../../shared/adapters/cluster-auth/cluster-auth.ts');
    return new CloudClusterAuth({ clock });
  });
  return { prepare: async (target, stored) => (await auth()).prepare(target, stored) };
}
