import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RelayAgent } from '../../../runners/relay/agent.ts';
import type { RelayAgentOptions } from '../../../runners/relay/agent-options.ts';
import { LocalAssetStore } from '../../../shared/adapters/local/asset-store.ts';
import { FileSecretSource } from '../../../shared/adapters/local/secret-source.ts';
import { openDatabase, type SqliteDatabase } from '../../../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../../../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../../shared/adapters/sqlite/target-store.ts';
import { SqliteWorkQueue } from '../../../shared/adapters/sqlite/work-queue.ts';
import { cancelRun } from '../../../shared/app/runs.ts';
import { isTerminal, type Run, transition } from '../../../shared/domain/run.ts';
import { encodeRunMessage } from '../../../shared/domain/run-message.ts';
import { systemClock } from '../../../shared/ports/clock.ts';
import type {
  ExecutionRequest,
  ExecutionResult,
  Executor,
  LineSink,
  RunningExecution,
} from '../../../shared/ports/executor.ts';
import type { LogStream } from '../../../shared/ports/log-store.ts';
import { createQueuedRun, markLaunched, PLAYBOOKS_ROOT, silentLogger, vmTarget } from '../app/harness.ts';

/** One task of the fake executor; the test decides when and how it ends. */
class FakeExecution implements RunningExecution {
  readonly done: Promise<ExecutionResult>;
  killedWith: number | undefined;
  #resolve!: (result: ExecutionResult) => void;
  #settled = false;

  constructor(
    readonly handle: string,
    readonly runId: string,
    private readonly sink: LineSink,
    private readonly onEnd: () => void,
  ) {
    this.done = new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }

  emit(...lines: readonly (string | { stream: LogStream; text: string })[]): void {
    this.sink(lines.map((l) => (typeof l === 'string' ? { stream: 'stdout', text: l } : l)));
  }

  finish(result: ExecutionResult): void {
    if (this.#settled) return;
    this.#settled = true;
    this.onEnd();
    this.#resolve(result);
  }

  async kill(graceMs: number): Promise<void> {
    this.killedWith = graceMs;
    this.finish({ signal: 'SIGTERM' });
    await this.done;
  }
}

/** An in-memory Executor: records starts, adoptions and reaps; counts tasks running at once. */
class FakeExecutor implements Executor {
  readonly name = 'process' as const;
  readonly started: ExecutionRequest[] = [];
  readonly executions = new Map<string, FakeExecution>();
  readonly adopted: { handle: string; workDir: string; execution: FakeExecution }[] = [];
  readonly reapCalls: ReadonlySet<string>[] = [];
  running = 0;
  maxRunning = 0;
  #gate: Promise<void> | undefined;
  #openGate: (() => void) | undefined;
  #shutDown = false;

  /** Hold every start open, before its task exists, until the returned function is called. */
  holdStarts(): () => void {
    this.#gate = new Promise<void>((resolve) => {
      this.#openGate = resolve;
    });
    return () => this.#openGate?.();
  }

  /** End of test: let held starts go and end every task, now and from now on. */
  shutDown(): void {
    this.#shutDown = true;
    this.#openGate?.();
    for (const e of this.executions.values()) e.finish({ exitCode: 0 });
    for (const a of this.adopted) a.execution.finish({ exitCode: 0 });
  }

  async start(request: ExecutionRequest, sink: LineSink): Promise<RunningExecution> {
    this.started.push(request);
    await this.#gate;
    const execution = this.#track(`h-${request.runId}`, request.runId, sink);
    this.executions.set(request.runId, execution);
    return execution;
  }

  async adopt(handle: string, workDir: string, sink: LineSink): Promise<RunningExecution> {
    const execution = this.#track(handle, handle, sink);
    this.adopted.push({ handle, workDir, execution });
    return execution;
  }

  async reapOrphans(keep: ReadonlySet<string>): Promise<readonly string[]> {
    this.reapCalls.push(new Set(keep));
    return [];
  }

  execution(runId: string): FakeExecution {
    const execution = this.executions.get(runId);
    if (execution === undefined) throw new Error(`no execution started for ${runId}`);
    return execution;
  }

  #track(handle: string, runId: string, sink: LineSink): FakeExecution {
    this.running += 1;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    const execution = new FakeExecution(handle, runId, sink, () => {
      this.running -= 1;
    });
    if (this.#shutDown) execution.finish({ exitCode: 0 });
    return execution;
  }
}

const WAIT = { timeout: 10_000, interval: 20 } as const;

describe('RelayAgent', () => {
  let dir: string;
  let db: SqliteDatabase;
  let store: SqliteRunStore;
  let targets: SqliteTargetStore;
  let queue: SqliteWorkQueue;
  let logs: SqliteLogStore;
  let executor: FakeExecutor;
  /** Every executor a test made, so afterEach can end their tasks. */
  let executors: FakeExecutor[];
  let agents: RelayAgent[];

  const newAgent = (overrides: Partial<RelayAgentOptions> = {}): RelayAgent => {
    const agent = new RelayAgent({
      id: 'r1',
      store,
      targets,
      queue,
      logs,
      executor,
      secrets: new FileSecretSource({ dataDir: dir }),
      assets: new LocalAssetStore({ root: PLAYBOOKS_ROOT }),
      clock: systemClock,
      logger: silentLogger(),
      workRoot: join(dir, 'work'),
      concurrency: 3,
      pollWaitSeconds: 1,
      visibilityTimeoutSeconds: 30,
      cancelPollMs: 25,
      killGraceMs: 50,
      ...overrides,
    });
    agents.push(agent);
    return agent;
  };

  /** A run the dispatcher has handed to the relay queue (state `launched`, handle `relay:relay`). */
  const handOver = async (id: string, input: Parameters<typeof createQueuedRun>[2] | object = {}) => {
    const run = await createQueuedRun(store, systemClock, { id, ...input });
    const launched = await markLaunched(store, systemClock, run);
    await queue.send(encodeRunMessage(id));
    return launched;
  };

  const settled = async (id: string): Promise<Run> => {
    let run: Run | undefined;
    await vi.waitFor(async () => {
      run = await store.getRun(id);
      expect(run !== undefined && isTerminal(run.state)).toBe(true);
    }, WAIT);
    return run as Run;
  };

  const startedExecution = async (id: string): Promise<ReturnType<FakeExecutor['execution']>> => {
    await vi.waitFor(() => expect(executor.executions.has(id)).toBe(true), WAIT);
    return executor.execution(id);
  };

  const taskLines = async (id: string): Promise<string[]> =>
    (await logs.read(id, { limit: 5000 })).lines.filter((l) => l.stream !== 'system').map((l) => l.text);

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rw-relay-'));
    writeFileSync(join(dir, 'secrets.json'), JSON.stringify({ 'db-admin': 's3cr3t-value' }), { mode: 0o600 });
    chmodSync(join(dir, 'secrets.json'), 0o600);
    db = openDatabase(join(dir, 'rw.db'));
    store = new SqliteRunStore({ db });
    targets = new SqliteTargetStore({ db });
    queue = new SqliteWorkQueue({ db, name: 'relay', visibilityTimeoutSeconds: 30 });
    logs = new SqliteLogStore({ db });
    executor = new FakeExecutor();
    executors = [executor];
    agents = [];
    await targets.putTarget(vmTarget('vm-1'));
  });

  afterEach(async () => {
    // Anything still running ends now, so stop() has nothing to wait for.
    for (const ex of executors) ex.shutDown();
    await Promise.all(agents.map((a) => a.stop(5_000)));
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('settles a task that exits 0 as succeeded, with its output stored in order', async () => {
    const agent = newAgent();
    await handOver('run-1');
    await agent.start();
    const execution = await startedExecution('run-1');
    const output = Array.from({ length: 450 }, (_, i) => `line ${i}`);

    execution.emit(...output.slice(0, 10));
    execution.emit(...output.slice(10));
    execution.finish({ exitCode: 0 });

    const run = await settled('run-1');
    expect(run).toMatchObject({
      state: 'succeeded',
      exitCode: 0,
      owner: 'relay:r1',
      launch: { backend: 'local', handle: 'relay:r1/h-run-1' },
    });
    expect(run.history.map((h) => h.state)).toEqual([
      'queued',
      'dispatching',
      'launched',
      'running',
      'succeeded',
    ]);
    expect(await taskLines('run-1')).toEqual(output);
    const all = (await logs.read('run-1', { limit: 5000 })).lines;
    expect(all.map((l) => l.seq)).toEqual(all.map((_, i) => i + 1));
    expect(all.at(-1)).toMatchObject({ stream: 'system', text: 'remote-worker: succeeded' });
    // The message goes once the run is settled (just after the write the wait above saw).
    await vi.waitFor(() => expect(queue.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 }), WAIT);
  });

  it("makes the next run's work dir of an ended run's, emptied, and leaves no spare behind on stop", async () => {
    const agent = newAgent();
    await handOver('run-1');
    await agent.start();
    const first = await startedExecution('run-1');
    const firstDir = executor.started[0]?.workDir ?? '';
    writeFileSync(join(firstDir, 'output.log'), 'what the first run wrote\n');
    const firstInode = statSync(firstDir).ino;
    first.finish({ exitCode: 0 });
    await settled('run-1');
    await vi.waitFor(() => expect(existsSync(firstDir)).toBe(false), WAIT);

    await handOver('run-2');
    await startedExecution('run-2');
    const secondDir = executor.started[1]?.workDir ?? '';
    expect(secondDir).toBe(join(dir, 'work', 'run-2.1'));
    expect(statSync(secondDir).ino).toBe(firstInode);
    expect(readdirSync(secondDir)).toEqual([]);
    expect(statSync(secondDir).mode & 0o7777).toBe(0o700);

    executor.execution('run-2').finish({ exitCode: 0 });
    await settled('run-2');
    await agent.stop(5_000);
    expect(readdirSync(join(dir, 'work'))).toEqual([]);
  });

  it('fails a task that exits 2, quoting the fatal line and keeping the exit code', async () => {
    const agent = newAgent();
    await handOver('run-1');
    await agent.start();
    const execution = await startedExecution('run-1');
    const fatal = 'fatal: [vm-1]: FAILED! => {"changed": false, "msg": "boom"}';

    execution.emit('PLAY [all]', `  ${fatal}`, 'PLAY RECAP');
    execution.finish({ exitCode: 2 });

    const run = await settled('run-1');
    expect(run).toMatchObject({
      state: 'failed',
      exitCode: 2,
      reason: `The task exited with code 2: ${fatal}`,
    });
  });

  it('kills the task and settles cancelled when a cancel is requested while it runs', async () => {
    const agent = newAgent();
    await handOver('run-1');
    await agent.start();
    const execution = await startedExecution('run-1');
    await vi.waitFor(async () => expect((await store.getRun('run-1'))?.state).toBe('running'), WAIT);

    await cancelRun({ store, clock: systemClock }, 'run-1');

    const run = await settled('run-1');
    expect(execution.killedWith).toBe(50);
    expect(run).toMatchObject({
      state: 'cancelled',
      reason: 'Cancelled while running; the task was stopped',
    });
    expect(run.exitCode).toBeUndefined();
  });

  it('kills the task and settles timed_out when the run outlives timeoutSeconds', async () => {
    const agent = newAgent();
    await handOver('run-1', { timeoutSeconds: 1 });
    await agent.start();
    const execution = await startedExecution('run-1');

    const run = await settled('run-1');

    expect(execution.killedWith).toBe(50);
    expect(run).toMatchObject({ state: 'timed_out', reason: 'Still running after its 1 s timeout; stopped' });
  });

  it('runs at most `concurrency` tasks at once and takes the next when one ends', async () => {
    const agent = newAgent({ concurrency: 2 });
    for (const id of ['run-1', 'run-2', 'run-3']) await handOver(id);
    await agent.start();
    await vi.waitFor(() => expect(executor.started).toHaveLength(2), WAIT);
    await new Promise((resolve) => setTimeout(resolve, 300)); // room for a wrongful third start
    expect(executor.started).toHaveLength(2);
    const [first] = executor.started;

    executor.execution(first?.runId ?? '').finish({ exitCode: 0 });

    await vi.waitFor(() => expect(executor.started).toHaveLength(3), WAIT);
    for (const e of executor.executions.values()) e.finish({ exitCode: 0 });
    for (const id of ['run-1', 'run-2', 'run-3']) expect((await settled(id)).state).toBe('succeeded');
    expect(executor.maxRunning).toBe(2);
  });

  it('passes a bound secret to the task only through its environment', async () => {
    const agent = newAgent();
    await handOver('run-1', { secrets: [{ var: 'db_password', secret: 'db-admin' }] });
    await agent.start();
    await startedExecution('run-1');

    const [request] = executor.started;

    expect(request?.secretEnv).toEqual({ RW_SECRET_0: 's3cr3t-value' });
    expect(request?.spec.secretVars).toEqual([{ var: 'db_password', env: 'RW_SECRET_0' }]);
    expect(JSON.stringify(request?.spec)).not.toContain('s3cr3t-value');
    expect(JSON.stringify(await store.getRun('run-1'))).not.toContain('s3cr3t-value');
  });

  it('fails a run whose bound secret does not exist, naming it, without starting a task', async () => {
    const agent = newAgent();
    await handOver('run-1', { secrets: [{ var: 'db_password', secret: 'no-such-secret' }] });
    await agent.start();

    const run = await settled('run-1');

    expect(run).toMatchObject({
      state: 'failed',
      reason: 'Secret no-such-secret (bound to db_password) could not be resolved',
    });
    expect(executor.started).toEqual([]);
  });

  /** A run recorded running on `relay` with the executor's `handle`, as a relay left it before a restart. */
  const runningOn = async (id: string, relay: string, handle: string) => {
    const launched = await markLaunched(
      store,
      systemClock,
      await createQueuedRun(store, systemClock, { id }),
      {
        owner: `relay:${relay}`,
      },
    );
    await store.updateRun(
      transition(launched, 'running', systemClock.now(), {
        patch: {
          launch: { backend: 'local', intentAt: systemClock.now(), handle: `relay:${relay}/${handle}` },
        },
      }),
      launched.version,
    );
    return launched;
  };

  it('adopts on start the running run it owns and reaps orphans keeping that run', async () => {
    const launched = await runningOn('run-1', 'r1', 'h-before');
    await runningOn('run-2', 'r2', 'h-other');
    const agent = newAgent();

    await agent.start();

    await vi.waitFor(() =>
      expect(executor.adopted.map((a) => ({ handle: a.handle, workDir: a.workDir }))).toEqual([
        { handle: 'h-before', workDir: join(dir, 'work', `run-1.${launched.attempt}`) },
      ]),
    );
    expect(executor.reapCalls).toEqual([new Set(['run-1'])]);
    executor.adopted[0]?.execution.finish({ exitCode: 0 });
    expect(await settled('run-1')).toMatchObject({ state: 'succeeded', exitCode: 0 });
    expect((await store.getRun('run-2'))?.state).toBe('running');
  });

  it('adopts a running run in the work dir a relay made before work dirs were named by attempt', async () => {
    const launched = await runningOn('run-1', 'r1', 'h-before');
    mkdirSync(join(dir, 'work', 'run-1'), { recursive: true });
    writeFileSync(join(dir, 'work', 'run-1', 'attempt'), String(launched.attempt));

    await newAgent().start();

    await vi.waitFor(() =>
      expect(executor.adopted.map((a) => a.workDir)).toEqual([join(dir, 'work', 'run-1')]),
    );
    executor.adopted[0]?.execution.finish({ exitCode: 0 });
    expect(await settled('run-1')).toMatchObject({ state: 'succeeded' });
  });

  it('drains on stop(): waits for the running task before resolving', async () => {
    const agent = newAgent();
    await handOver('run-1');
    await agent.start();
    const execution = await startedExecution('run-1');
    let stopped = false;

    const stopping = agent.stop(10_000).then(() => {
      stopped = true;
    });
    // Longer than the 1 s long poll, so only the running task can still hold stop() open.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(stopped).toBe(false);
    execution.emit('last words');
    execution.finish({ exitCode: 0 });
    await stopping;

    expect((await store.getRun('run-1'))?.state).toBe('succeeded');
    expect(await taskLines('run-1')).toEqual(['last words']);
  });

  it('starts no new task once stop() has been called, even from a long poll already in flight', async () => {
    const agent = newAgent({ pollWaitSeconds: 5 });
    await agent.start();
    await new Promise((resolve) => setTimeout(resolve, 100)); // the poll loop is now waiting on the queue

    const stopping = agent.stop(2_000);
    await handOver('run-1');
    await stopping;

    expect(executor.started).toEqual([]);
    expect((await store.getRun('run-1'))?.state).toBe('launched');
    expect(queue.depth().visible).toBe(1);
  });

  it('does not take over a launched run another relay has already claimed', async () => {
    // Two relays share the queue (AWS mode) and the run's message arrives twice (the dispatcher
    // was redelivered after RelayLauncher.launch sent it). r1 has claimed the run and is starting
    // its task; r2 must leave it to r1 rather than rewrite the owner and start a second task.
    const openGate = executor.holdStarts();
    const r1 = newAgent({ id: 'r1', concurrency: 1 });
    await handOver('run-1');
    await r1.start();
    await vi.waitFor(() => expect(executor.started).toHaveLength(1), WAIT);
    const r2Executor = new FakeExecutor();
    executors.push(r2Executor);
    const r2 = newAgent({ id: 'r2', executor: r2Executor });

    await r2.start();
    await queue.send(encodeRunMessage('run-1'));
    await vi.waitFor(() => expect(queue.depth().visible).toBe(0), WAIT); // r2 (r1 is full) has the duplicate
    await new Promise((resolve) => setTimeout(resolve, 500));

    expect((await store.getRun('run-1'))?.owner).toBe('relay:r1');
    expect(r2Executor.started).toEqual([]);
    openGate();
    await vi.waitFor(async () => expect((await store.getRun('run-1'))?.state).toBe('running'), WAIT);
    expect((await store.getRun('run-1'))?.launch?.handle).toBe('relay:r1/h-run-1');
  });
});
