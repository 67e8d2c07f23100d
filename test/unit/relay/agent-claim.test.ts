import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RelayAgent } from '../../../runners/relay/agent.ts';
import { FileSecretSource } from '../../../shared/adapters/local/secret-source.ts';
import { RelayLauncher } from '../../../shared/adapters/relay/relay-launcher.ts';
import { SqliteWorkQueue } from '../../../shared/adapters/sqlite/work-queue.ts';
import { dispatchRun } from '../../../shared/app/dispatch.ts';
import { isTerminal, type Run } from '../../../shared/domain/run.ts';
import type { ExecutionResult, Executor, RunningExecution } from '../../../shared/ports/executor.ts';
import type { LaunchRequest } from '../../../shared/ports/launcher.ts';
import { createQueuedRun, makeTestApp, type TestApp, vmTarget } from '../app/harness.ts';

const WAIT = { timeout: 10_000, interval: 10 };

/** An executor whose tasks end when the test says; it records every start. */
function heldExecutor() {
  const starts: string[] = [];
  const ends = new Map<string, (result: ExecutionResult) => void>();
  const executor: Executor = {
    name: 'process',
    async start(request): Promise<RunningExecution> {
      starts.push(request.runId);
      const done = new Promise<ExecutionResult>((resolve) => ends.set(request.runId, resolve));
      return {
        handle: `h-${request.runId}`,
        done,
        kill: async () => ends.get(request.runId)?.({ signal: 'SIGTERM' }),
      };
    },
    adopt: async (handle) => ({ handle, done: new Promise(() => {}), kill: async () => {} }),
    reapOrphans: async () => [],
  };
  const finish = (runId: string) => ends.get(runId)?.({ exitCode: 0 });
  return { executor, starts, finish, finishAll: () => [...ends.keys()].forEach(finish) };
}

describe('RelayAgent claim from the relay message', () => {
  let dir: string;
  let app: TestApp;
  let relayQueue: SqliteWorkQueue;
  let relayLauncher: RelayLauncher;
  let held: ReturnType<typeof heldExecutor>;
  let agents: RelayAgent[];

  const newAgent = (id: string) => {
    const agent = new RelayAgent({
      id,
      store: app.store,
      targets: app.targets,
      queue: relayQueue,
      logs: app.logs,
      executor: held.executor,
      secrets: new FileSecretSource({ dataDir: dir }),
      assets: app.deps.assets,
      clock: app.clock,
      logger: app.deps.logger,
      workRoot: join(dir, `work-${id}`),
      concurrency: 2,
      pollWaitSeconds: 1,
      visibilityTimeoutSeconds: 30,
      cancelPollMs: 20,
    });
    agents.push(agent);
    return agent;
  };
  const settled = async (id: string): Promise<Run> => {
    let run: Run | undefined;
    await vi.waitFor(async () => {
      run = await app.store.getRun(id);
      expect(run !== undefined && isTerminal(run.state)).toBe(true);
    }, WAIT);
    return run as Run;
  };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rw-relay-claim-'));
    held = heldExecutor();
    agents = [];
    app = makeTestApp();
    relayQueue = new SqliteWorkQueue({ db: app.db, name: 'relay', visibilityTimeoutSeconds: 30 });
    relayLauncher = new RelayLauncher(relayQueue, app.logs);
    Object.assign(app.deps.launchers, { local: relayLauncher });
    await app.targets.putTarget(vmTarget('vm-1'));
  });
  afterEach(async () => {
    held.finishAll();
    await Promise.all(agents.map((a) => a.stop(5_000)));
    app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("starts the task once when the message arrives before the dispatcher's launched write", async () => {
    await newAgent('r1').start();
    await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    // The relay claims and starts the task while dispatchRun is still inside launch().
    const send = relayLauncher.launch.bind(relayLauncher);
    relayLauncher.launch = async (request: LaunchRequest) => {
      const handle = await send(request);
      await vi.waitFor(() => expect(held.starts).toEqual(['run-1']), WAIT);
      return handle;
    };

    const outcome = await dispatchRun(app.deps, 'run-1', 'dispatcher:m-1');

    const during = await app.store.getRun('run-1');
    expect(outcome).toBe('launched');
    expect(during).toMatchObject({
      state: 'running',
      owner: 'relay:r1',
      launch: { handle: 'relay:r1/h-run-1' },
    });
    held.finish('run-1');
    const run = await settled('run-1');
    expect(run.state).toBe('succeeded');
    expect(run.history.map((h) => h.state)).toEqual([
      'queued',
      'dispatching',
      'launched',
      'running',
      'succeeded',
    ]);
    expect(held.starts).toEqual(['run-1']);
  });

  it('prepares the task in its work dir while its claim is made durable, and starts it only once the claim resolves', async () => {
    let durable: () => void = () => {};
    const madeDurable = new Promise<void>((resolve) => (durable = resolve));
    const claimRelayRun = app.store.claimRelayRun.bind(app.store);
    app.store.claimRelayRun = async (runId, claim) => {
      const result = await claimRelayRun(runId, claim); // committed: onCommitted has been called
      await madeDurable;
      return result;
    };
    await newAgent('r1').start();
    await createQueuedRun(app.store, app.clock, { id: 'run-p' });
    await dispatchRun(app.deps, 'run-p', 'dispatcher:m-1');
    const mark = join(dir, 'work-r1', 'run-p.1');

    await vi.waitFor(() => expect(existsSync(mark)).toBe(true), WAIT);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const startsBeforeDurable = [...held.starts];
    durable();

    await vi.waitFor(() => expect(held.starts).toEqual(['run-p']), WAIT);
    expect(startsBeforeDurable).toEqual([]);
    expect(existsSync(mark)).toBe(true);
    held.finish('run-p');
    expect((await settled('run-p')).state).toBe('succeeded');
  });

  it('starts the task once when the message is delivered twice, to one relay or two', async () => {
    await createQueuedRun(app.store, app.clock, { id: 'run-2' });
    await dispatchRun(app.deps, 'run-2', 'dispatcher:m-1');
    const [sent] = (await relayQueue.receive({ max: 1, waitSeconds: 0, visibilityTimeoutSeconds: 0 })) ?? [];
    // SQS is at least once: two more copies of the same message, seen by two relays at once.
    await relayQueue.send(sent?.body ?? '');
    await relayQueue.send(sent?.body ?? '');

    await Promise.all([newAgent('r1').start(), newAgent('r2').start()]);
    await vi.waitFor(() => expect(held.starts).toEqual(['run-2']), WAIT);
    await vi.waitFor(() => expect(relayQueue.depth().visible).toBe(0), WAIT);
    held.finish('run-2');
    const run = await settled('run-2');

    expect(run.state).toBe('succeeded');
    expect(held.starts).toEqual(['run-2']);
    expect(run.history.filter((h) => h.state === 'running')).toHaveLength(1);
  });

  it('claims the messages of one receive side by side, not one after the other', async () => {
    for (const id of ['run-5', 'run-6']) {
      await createQueuedRun(app.store, app.clock, { id });
      await dispatchRun(app.deps, id, 'dispatcher:m-1');
    }
    // Each claim is held until both are in flight; claims made one after the other would never get there.
    let inFlight = 0;
    let most = 0;
    const claim = app.store.claimRelayRun.bind(app.store);
    vi.spyOn(app.store, 'claimRelayRun').mockImplementation(async (id, request) => {
      most = Math.max(most, ++inFlight);
      await vi.waitFor(() => expect(most).toBe(2), { timeout: 2_000, interval: 5 }).catch(() => {});
      inFlight -= 1;
      return claim(id, request);
    });

    await newAgent('r1').start();

    await vi.waitFor(() => expect([...held.starts].sort()).toEqual(['run-5', 'run-6']), WAIT);
    expect(most).toBe(2);
  });

  it('starts the task once when one receive holds the same message twice', async () => {
    await createQueuedRun(app.store, app.clock, { id: 'run-7' });
    await dispatchRun(app.deps, 'run-7', 'dispatcher:m-1');
    const [sent] = (await relayQueue.receive({ max: 1, waitSeconds: 0, visibilityTimeoutSeconds: 0 })) ?? [];
    await relayQueue.send(sent?.body ?? ''); // two copies visible: the agent's first receive takes both
    // Claims that take a while, as over the network: both copies are in hand before either is answered.
    const claim = app.store.claimRelayRun.bind(app.store);
    const claims = vi.spyOn(app.store, 'claimRelayRun').mockImplementation(async (id, request) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return claim(id, request);
    });

    await newAgent('r1').start();
    await vi.waitFor(() => expect(held.starts).toEqual(['run-7']), WAIT);
    await vi.waitFor(async () => expect((await app.store.getRun('run-7'))?.state).toBe('running'), WAIT);
    await vi.waitFor(() => expect(relayQueue.depth().visible).toBe(0), WAIT);
    held.finish('run-7');
    const run = await settled('run-7');

    expect(run.state).toBe('succeeded');
    expect(held.starts).toEqual(['run-7']);
    expect(run.history.filter((h) => h.state === 'running')).toHaveLength(1);
    // The second copy waited for the first and found its run in hand: one claim, not a race of two.
    expect(claims).toHaveBeenCalledTimes(1);
  });

  it("stops a running task when its run is cancelled, seen by the relay's one read for all its runs", async () => {
    await newAgent('r1').start();
    await createQueuedRun(app.store, app.clock, { id: 'run-3' });
    await createQueuedRun(app.store, app.clock, { id: 'run-4' });
    await dispatchRun(app.deps, 'run-3', 'dispatcher:m-1');
    await dispatchRun(app.deps, 'run-4', 'dispatcher:m-1');
    await vi.waitFor(() => expect([...held.starts].sort()).toEqual(['run-3', 'run-4']), WAIT);
    await vi.waitFor(async () => expect((await app.store.getRun('run-4'))?.state).toBe('running'), WAIT);
    const reads: string[][] = [];
    const getRuns = app.store.getRuns.bind(app.store);
    const getRun = vi.spyOn(app.store, 'getRun');
    vi.spyOn(app.store, 'getRuns').mockImplementation((ids) => {
      reads.push([...ids].sort());
      return getRuns(ids);
    });
    const { cancelRun } = await import('../../../shared/app/runs.ts');

    await cancelRun(app.deps, 'run-4');
    const run = await settled('run-4');

    expect(run).toMatchObject({
      state: 'cancelled',
      reason: 'Cancelled while running; the task was stopped',
    });
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.every((ids) => ids.length === 2 || ids.join() === 'run-3')).toBe(true);
    // No per-run read while watching: getRun is only called by cancelRun and the settle of run-4.
    expect(getRun.mock.calls.every(([id]) => id === 'run-4')).toBe(true);
    expect((await app.store.getRun('run-3'))?.state).toBe('running');
  });
});
