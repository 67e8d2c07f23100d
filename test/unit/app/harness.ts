import { fileURLToPath } from 'node:url';
import { Logger } from '@aws-lambda-powertools/logger';
import { LocalAssetStore } from '../../../shared/adapters/local/asset-store.ts';
import { openDatabase, type SqliteDatabase } from '../../../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../../../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../../shared/adapters/sqlite/target-store.ts';
import { SqliteWorkQueue } from '../../../shared/adapters/sqlite/work-queue.ts';
import type { AppDeps, RelayAvailability } from '../../../shared/app/deps.ts';
import { loadSettings, type Settings } from '../../../shared/config/settings.ts';
import { amend, type NewRun, newRun, type Run, type Runner, transition } from '../../../shared/domain/run.ts';
import { decodeRunMessage } from '../../../shared/domain/run-message.ts';
import type { Target } from '../../../shared/domain/target.ts';
import type { Clock } from '../../../shared/ports/clock.ts';
import type { BackendStatus, Launcher, Launchers, LaunchRequest } from '../../../shared/ports/launcher.ts';
import type { LogPage } from '../../../shared/ports/log-store.ts';
import type { RunStore } from '../../../shared/ports/run-store.ts';

/** The example playbooks a user can copy; real files for the LocalAssetStore. */
export const PLAYBOOKS_ROOT = fileURLToPath(new URL('../../../examples/playbooks', import.meta.url));

export const T0 = '2025-01-01T00:00:00.000Z';

/** A clock that only moves when the test says so. */
export class ManualClock implements Clock {
  #ms: number;

  constructor(start: string = T0) {
    this.#ms = Date.parse(start);
  }

  now(): string {
    return new Date(this.#ms).toISOString();
  }

  nowMs(): number {
    return this.#ms;
  }

  advance(ms: number): void {
    this.#ms += ms;
  }
}

export const silentLogger = (): Logger =>
  new Logger({ serviceName: 'remote-worker-test', logLevel: 'SILENT' });

export interface LaunchCall {
  readonly runId: string;
  readonly attempt: number;
  /** `<runId>#<attempt>`: what a backend uses as its idempotency key (ECS clientToken). */
  readonly key: string;
  readonly image: string;
}

/**
 * A Launcher that records what it was asked and, like a real backend with
 * an idempotency key, creates one task per `<runId>#<attempt>` and adopts it
 * on a repeated launch. `failures` queues errors the next launches throw.
 */
export class RecordingLauncher implements Launcher {
  readonly launches: LaunchCall[] = [];
  /** Idempotency key → handle of the task the "backend" created. */
  readonly tasks = new Map<string, string>();
  readonly cancels: { handle: string; runId: string; graceSeconds: number }[] = [];
  readonly cleanups: { handle: string; runId: string }[] = [];
  /** Errors for the next launch calls of any run, consumed in order. */
  readonly failures: Error[] = [];
  /** Per run id: errors for that run's next launch calls. */
  readonly failuresFor = new Map<string, Error[]>();
  /** Runs inside `launch` before the backend "creates" the task (simulate concurrent writers). */
  beforeLaunch: ((request: LaunchRequest) => Promise<void> | void) | undefined;
  /** Runs after the task exists, before `launch` returns (simulate a crash after the backend call). */
  afterTaskCreated: ((request: LaunchRequest) => Promise<void> | void) | undefined;

  constructor(readonly backend: Runner = 'local') {}

  async launch(request: LaunchRequest): Promise<string> {
    const { run, image } = request;
    const key = `${run.id}#${run.attempt}`;
    this.launches.push({ runId: run.id, attempt: run.attempt, key, image });
    await this.beforeLaunch?.(request);
    const queued = this.failuresFor.get(run.id)?.shift() ?? this.failures.shift();
    if (queued !== undefined) throw queued;
    let handle = this.tasks.get(key);
    if (handle === undefined) {
      handle = `fake:${key}`;
      this.tasks.set(key, handle);
    }
    await this.afterTaskCreated?.(request);
    return handle;
  }

  launchesFor(runId: string): LaunchCall[] {
    return this.launches.filter((l) => l.runId === runId);
  }

  async status(): Promise<BackendStatus> {
    return { state: 'running' };
  }

  async logs(): Promise<LogPage> {
    return { lines: [], nextCursor: '' };
  }

  async cancel(handle: string, run: Run, graceSeconds: number): Promise<void> {
    this.cancels.push({ handle, runId: run.id, graceSeconds });
  }

  async cleanup(handle: string, run: Run): Promise<void> {
    this.cleanups.push({ handle, runId: run.id });
  }
}

export interface TestApp {
  readonly db: SqliteDatabase;
  readonly store: SqliteRunStore;
  readonly targets: SqliteTargetStore;
  readonly dispatchQueue: SqliteWorkQueue;
  readonly logs: SqliteLogStore;
  readonly launcher: RecordingLauncher;
  readonly clock: ManualClock;
  readonly deps: AppDeps;
  close(): void;
}

export interface TestAppOptions {
  /** Settings as environment variables (`ANSIBLE_RUNNER_AWS: 'ecs'`). */
  readonly env?: Readonly<Record<string, string>>;
  readonly launchers?: (launcher: RecordingLauncher) => Launchers;
  readonly relay?: RelayAvailability;
  readonly launcherBackend?: Runner;
}

/** AppDeps over a fresh in-memory SQLite database, the example playbooks and a recording launcher. */
export function makeTestApp(options: TestAppOptions = {}): TestApp {
  const clock = new ManualClock();
  const db = openDatabase(':memory:');
  const store = new SqliteRunStore({ db, clock });
  const targets = new SqliteTargetStore({ db });
  const dispatchQueue = new SqliteWorkQueue({ db, name: 'dispatch', visibilityTimeoutSeconds: 30, clock });
  const logs = new SqliteLogStore({ db, clock });
  const launcher = new RecordingLauncher(options.launcherBackend ?? 'local');
  const settings: Settings = loadSettings({ env: options.env ?? {} });
  let ids = 0;
  const deps: AppDeps = {
    store,
    targets,
    dispatchQueue,
    logs,
    assets: new LocalAssetStore({ root: PLAYBOOKS_ROOT }),
    settings,
    launchers: options.launchers?.(launcher) ?? { [launcher.backend]: launcher },
    relay: options.relay ?? { available: true },
    clock,
    newId: () => `run-${String(++ids).padStart(4, '0')}`,
    logger: silentLogger(),
  };
  return { db, store, targets, dispatchQueue, logs, launcher, clock, deps, close: () => db.close() };
}

export function vmTarget(id: string, overrides: Partial<Extract<Target, { kind: 'vm' }>> = {}): Target {
  return {
    id,
    kind: 'vm',
    cloud: 'local',
    name: id,
    address: '10.0.0.5',
    connection: 'ssh',
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  };
}

/** Insert a queued run as `submitRun` would have written it for the local runner. */
export async function createQueuedRun(
  store: RunStore,
  clock: Clock,
  input: Partial<NewRun> & { readonly id: string },
): Promise<Run> {
  const draft = newRun(
    {
      kind: 'vm',
      targetId: 'vm-1',
      asset: 'hello/site.yml',
      requestedBy: 'alice',
      timeoutSeconds: 600,
      ...input,
    },
    clock.now(),
  );
  const { run } = await store.createRun({ ...draft, runner: 'local', image: 'chrweav/ansible-winrm:latest' });
  return run;
}

/** Move a stored run through the writes the dispatcher makes, ending `launched` with `handle`. */
export async function markLaunched(
  store: RunStore,
  clock: Clock,
  run: Run,
  options: { owner?: string; handle?: string; backend?: Runner } = {},
): Promise<Run> {
  const backend = options.backend ?? 'local';
  const claimed = transition(run, 'dispatching', clock.now(), {
    patch: { owner: options.owner ?? 'dispatcher:m-1', attempt: run.attempt + 1 },
  });
  const intent = amend(claimed, clock.now(), { launch: { backend, intentAt: clock.now() } });
  const launched = transition(intent, 'launched', clock.now(), {
    patch: { launch: { backend, intentAt: clock.now(), handle: options.handle ?? 'relay:relay' } },
  });
  return store.updateRun(launched, run.version);
}

/** What the dispatch queue offers at the app's current (manual) time: the run ids, their messages deleted. */
export async function offeredRunIds(app: TestApp): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const batch = await app.dispatchQueue.receive({ max: 10 });
    if (batch.length === 0) return ids;
    for (const m of batch) {
      ids.push(decodeRunMessage(m.body)?.runId ?? '?');
      await app.dispatchQueue.delete(m.receiptHandle);
    }
  }
}
