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
import { lookEarly } from '../../../runners/relay/early-lookups.ts';
import { LogShipper } from '../../../runners/relay/log-shipper.ts';
import { startOrResume, workDirOf } from '../../../runners/relay/task-start.ts';
import { LocalAssetStore } from '../../../shared/adapters/local/asset-store.ts';
import { FileSecretSource } from '../../../shared/adapters/local/secret-source.ts';
import { openDatabase, type SqliteDatabase } from '../../../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../../../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../../shared/adapters/sqlite/target-store.ts';
import { SqliteWorkQueue } from '../../../shared/adapters/sqlite/work-queue.ts';
import type { Run } from '../../../shared/domain/run.ts';
import { systemClock } from '../../../shared/ports/clock.ts';
import type { ExecutionRequest, Executor, RunningExecution } from '../../../shared/ports/executor.ts';
import { createQueuedRun, markLaunched, PLAYBOOKS_ROOT, silentLogger, vmTarget } from '../app/harness.ts';

/** Records what it is asked; `resumable` is the task a crashed relay left for `resume` to find. */
class RecordingExecutor implements Executor {
  readonly name = 'process' as const;
  readonly started: ExecutionRequest[] = [];
  readonly resumed: string[] = [];
  resumable: RunningExecution | undefined;

  async start(request: ExecutionRequest): Promise<RunningExecution> {
    this.started.push(request);
    return { handle: `h-${request.runId}`, done: new Promise(() => {}), kill: async () => {} };
  }
  async adopt(): Promise<RunningExecution> {
    throw new Error('not used here');
  }
  async resume(runId: string): Promise<RunningExecution | undefined> {
    this.resumed.push(runId);
    return this.resumable;
  }
  async reapOrphans(): Promise<readonly string[]> {
    return [];
  }
}

describe('startOrResume', () => {
  let dir: string;
  let db: SqliteDatabase;
  let store: SqliteRunStore;
  let logs: SqliteLogStore;
  let executor: RecordingExecutor;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rw-start-'));
    writeFileSync(join(dir, 'secrets.json'), '{}', { mode: 0o600 });
    chmodSync(join(dir, 'secrets.json'), 0o600);
    db = openDatabase(join(dir, 'rw.db'));
    store = new SqliteRunStore({ db });
    logs = new SqliteLogStore({ db });
    executor = new RecordingExecutor();
    await new SqliteTargetStore({ db }).putTarget(vmTarget('vm-1'));
  });
  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const options = () => ({
    id: 'r1',
    store,
    targets: new SqliteTargetStore({ db }),
    queue: new SqliteWorkQueue({ db, name: 'relay', visibilityTimeoutSeconds: 30 }),
    logs,
    executor,
    secrets: new FileSecretSource({ dataDir: dir }),
    assets: new LocalAssetStore({ root: PLAYBOOKS_ROOT }),
    clock: systemClock,
    logger: silentLogger(),
    workRoot: join(dir, 'work'),
  });
  const launched = async (id: string): Promise<Run> =>
    markLaunched(store, systemClock, await createQueuedRun(store, systemClock, { id }));
  const start = async (run: Run) => {
    const shipper = new LogShipper(logs, run.id);
    const started = await startOrResume(options(), run, shipper);
    await shipper.close();
    const lines = (await logs.read(run.id, { limit: 100 })).lines.map((l) => l.text);
    return { ...started, lines };
  };
  const workRoot = () => join(dir, 'work');

  it("starts the prepared task in the attempt's own fresh work dir, whose existence is the attempt's mark", async () => {
    const run = await launched('run-1');
    const workDir = workDirOf(workRoot(), run);
    mkdirSync(workDir, { recursive: true });
    writeFileSync(join(workDir, 'left-over'), 'from a start of this attempt that never happened');

    const started = await start(run);

    expect(workDir).toBe(join(dir, 'work', `run-1.${run.attempt}`));
    expect(started.workDir).toBe(workDir);
    expect(started.execution.handle).toBe('h-run-1');
    expect(executor.started).toHaveLength(1);
    expect(executor.started[0]).toMatchObject({
      runId: 'run-1',
      workDir,
      spec: { runId: 'run-1', kind: 'vm' },
    });
    expect(readdirSync(workRoot())).toEqual([`run-1.${run.attempt}`]);
    expect(readdirSync(workDir)).toEqual([]);
    expect(started.lines).toEqual(['remote-worker: starting on relay r1 (process executor)']);
  });

  it('resumes the task an earlier incarnation started for this very attempt, and starts none', async () => {
    const run = await launched('run-2');
    mkdirSync(workDirOf(workRoot(), run), { recursive: true });
    executor.resumable = { handle: 'h-resumed', done: new Promise(() => {}), kill: async () => {} };

    const started = await start(run);

    expect(started.execution.handle).toBe('h-resumed');
    expect(started.workDir).toBe(workDirOf(workRoot(), run));
    expect(executor.resumed).toEqual(['run-2']);
    expect(executor.started).toEqual([]);
    expect(started.lines).toEqual(['remote-worker: relay r1 restarted and resumed the task it had started']);
  });

  it('resumes a task a relay started before work dirs were named by attempt (an upgrade mid-run)', async () => {
    const run = await launched('run-2b');
    const legacy = join(workRoot(), 'run-2b');
    mkdirSync(legacy, { recursive: true });
    writeFileSync(join(legacy, 'attempt'), String(run.attempt));
    executor.resumable = { handle: 'h-resumed', done: new Promise(() => {}), kill: async () => {} };

    const started = await start(run);

    expect(started.execution.handle).toBe('h-resumed');
    expect(started.workDir).toBe(legacy);
    expect(executor.started).toEqual([]);
  });

  it('starts afresh, removing it, when a dir from before work dirs were named by attempt has no task behind it', async () => {
    const run = await launched('run-2c');
    const legacy = join(workRoot(), 'run-2c');
    mkdirSync(legacy, { recursive: true });
    writeFileSync(join(legacy, 'attempt'), String(run.attempt));

    const started = await start(run);

    expect(executor.resumed).toEqual(['run-2c']);
    expect(started.workDir).toBe(workDirOf(workRoot(), run));
    expect(readdirSync(workRoot())).toEqual([`run-2c.${run.attempt}`]);
  });

  it("starts again in a fresh dir when only other attempts' dirs exist, asking to resume none, and removes them", async () => {
    const run = { ...(await launched('run-3')), attempt: 3 };
    const earlier = [workDirOf(workRoot(), { id: 'run-3', attempt: 2 }), join(workRoot(), 'run-3')];
    for (const d of earlier) {
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, 'attempt'), '2');
    }
    mkdirSync(workDirOf(workRoot(), { id: 'run-other', attempt: 3 }));

    const started = await start(run);

    expect(executor.resumed).toEqual([]);
    expect(executor.started.map((r) => r.workDir)).toEqual([workDirOf(workRoot(), run)]);
    expect(started.workDir).toBe(workDirOf(workRoot(), run));
    expect(readdirSync(workRoot()).sort()).toEqual(['run-3.3', 'run-other.3']);
  });

  it('makes the work root when it is missing', async () => {
    const run = await launched('run-7');

    const started = await start(run);

    expect(existsSync(started.workDir)).toBe(true);
    expect(statSync(started.workDir).mode & 0o777).toBe(0o700);
  });

  const plan = (asset: string, withTarget = false) => ({
    kind: 'vm' as const,
    targetId: 'vm-1',
    asset,
    image: 'img',
    ...(withTarget ? { target: vmTarget('vm-1') } : {}),
  });

  it('starts with the target looked up beside the claim, not asking for it again', async () => {
    const run = await launched('run-4');
    const o = options();
    const locate = vi.spyOn(o.assets, 'locate');
    const early = lookEarly(o, plan(run.asset));
    const getTarget = vi.spyOn(o.targets, 'getTarget');
    const shipper = new LogShipper(logs, run.id);

    expect(locate).not.toHaveBeenCalled(); // synchronous on this host: it would only delay the claim
    await startOrResume(o, run, shipper, { freshClaim: true, early });
    await shipper.close();

    expect(early.target?.id).toBe('vm-1');
    expect(getTarget).not.toHaveBeenCalled();
    expect(locate).toHaveBeenCalledTimes(1);
    expect(executor.started[0]?.spec).toMatchObject({
      asset: await new LocalAssetStore({ root: PLAYBOOKS_ROOT }).locate(run.asset),
      inventory: { all: { hosts: { 'vm-1': expect.anything() } } },
    });
  });

  it('reads no target early when the plan carries it', () => {
    expect(lookEarly(options(), plan('hello/site.yml', true)).target).toBeUndefined();
  });

  it('fails the start, naming the asset, when the asset is missing', async () => {
    const run = { ...(await launched('run-5')), asset: 'missing/site.yml' };
    const o = options();
    const early = lookEarly(o, plan(run.asset, true));
    const shipper = new LogShipper(logs, run.id);

    const started = startOrResume(o, run, shipper, { freshClaim: true, early });

    await expect(started).rejects.toThrow('Asset "missing/site.yml" does not exist');
    expect(executor.started).toEqual([]);
    expect(existsSync(workDirOf(workRoot(), run))).toBe(false);
  });

  it("reads the run's secret bindings side by side, each handed to the task under its own variable", async () => {
    const run = {
      ...(await launched('run-6')),
      secrets: [
        { var: 'token_a', secret: 'a' },
        { var: 'token_b', secret: 'b' },
      ],
    };
    // Each read is answered only once both are asked for: reads one after the other never finish.
    const asked: string[] = [];
    let bothAsked: () => void = () => {};
    const both = new Promise<void>((resolve) => {
      bothAsked = resolve;
    });
    const secrets = {
      get: async (name: string) => {
        asked.push(name);
        if (asked.length === 2) bothAsked();
        await both;
        return `value-${name}`;
      },
    };
    const shipper = new LogShipper(logs, run.id);

    await startOrResume({ ...options(), secrets }, run, shipper, { freshClaim: true });
    await shipper.close();

    expect(asked.sort()).toEqual(['a', 'b']);
    const request = executor.started[0];
    const envOf = (v: string) => request?.spec.secretVars.find((s) => s.var === v)?.env ?? '';
    expect(request?.secretEnv[envOf('token_a')]).toBe('value-a');
    expect(request?.secretEnv[envOf('token_b')]).toBe('value-b');
  });
});
