import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { makeReconcileRuns } from '../../../functions/status-sync/reconcile-runs.ts';
import { mutateRun } from '../../../shared/app/run-updates.ts';
import { amend, type Run, requestCancel, transition } from '../../../shared/domain/run.ts';
import type { BackendStatus, Launcher } from '../../../shared/ports/launcher.ts';
import type { LogPage } from '../../../shared/ports/log-store.ts';
import { createQueuedRun, makeTestApp, markLaunched, type TestApp, vmTarget } from '../app/harness.ts';

/** A backend whose answer per handle the test sets (running when unset); records what it was asked to do. */
class ScriptedLauncher implements Launcher {
  readonly backend = 'ecs' as const;
  readonly statuses = new Map<string, BackendStatus | Error>();
  readonly asked: string[] = [];
  readonly cancels: { handle: string; runId: string; graceSeconds: number }[] = [];
  readonly cleanups: { handle: string; runId: string }[] = [];

  async launch(): Promise<string> {
    throw new Error('not used');
  }

  async status(handle: string): Promise<BackendStatus> {
    this.asked.push(handle);
    const answer = this.statuses.get(handle) ?? { state: 'running' };
    if (answer instanceof Error) throw answer;
    return answer;
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

const OPTIONS = {
  sync: { staleAfterSeconds: 60, missingGraceSeconds: 300 },
  reconcile: { requeueAfterSeconds: 60, deadlineGraceSeconds: 30 },
} as const;

describe('makeReconcileRuns', () => {
  let app: TestApp;
  let ecs: ScriptedLauncher;
  let reconcile: ReturnType<typeof makeReconcileRuns>;

  const launchedRun = async (id: string, options: { timeoutSeconds?: number } = {}): Promise<Run> => {
    const run = await createQueuedRun(app.store, app.clock, {
      id,
      timeoutSeconds: options.timeoutSeconds ?? 3600,
    });
    return markLaunched(app.store, app.clock, run, { backend: 'ecs', handle: `ecs:c/${id}` });
  };

  beforeEach(async () => {
    ecs = new ScriptedLauncher();
    app = makeTestApp({ launchers: () => ({ ecs }) });
    await app.targets.putTarget(vmTarget('vm-1'));
    reconcile = makeReconcileRuns(app.deps, OPTIONS);
  });
  afterEach(() => app.close());

  it('leaves runs alone that changed recently: events keep those current', async () => {
    await launchedRun('run-1');
    app.clock.advance(59_000);

    const report = await reconcile();

    expect(ecs.asked).toEqual([]);
    expect(report.sync).toEqual({ advanced: [], settled: [], stopped: [], observed: [], unknown: [] });
  });

  it('adopts a running task whose events were missed', async () => {
    await launchedRun('run-1');
    app.clock.advance(61_000);

    const report = await reconcile();

    expect(report.sync.advanced).toEqual(['run-1']);
    expect(await app.store.getRun('run-1')).toMatchObject({ state: 'running' });
  });

  it('settles an exited task with its exit code and reason, and cleans up', async () => {
    await launchedRun('run-ok');
    await launchedRun('run-bad');
    ecs.statuses.set('ecs:c/run-ok', { state: 'exited', exitCode: 0 });
    ecs.statuses.set('ecs:c/run-bad', {
      state: 'exited',
      exitCode: 2,
      reason: 'the runner container exited with code 2',
    });
    app.clock.advance(61_000);

    const report = await reconcile();

    expect(report.sync.settled).toEqual(['run-bad', 'run-ok']);
    expect(await app.store.getRun('run-ok')).toMatchObject({ state: 'succeeded', exitCode: 0 });
    expect(await app.store.getRun('run-bad')).toMatchObject({
      state: 'failed',
      exitCode: 2,
      reason: 'The runner container exited with code 2',
    });
    expect(ecs.cleanups.map((c) => c.runId).sort()).toEqual(['run-bad', 'run-ok']);
  });

  it('fails a task the backend no longer knows, but only after the missing grace', async () => {
    await launchedRun('run-1');
    ecs.statuses.set('ecs:c/run-1', { state: 'missing', reason: 'ECS no longer knows task t-1' });
    app.clock.advance(120_000);

    await reconcile();
    expect((await app.store.getRun('run-1'))?.state).toBe('launched');

    app.clock.advance(181_000);
    const report = await reconcile();

    expect(report.sync.settled).toEqual(['run-1']);
    expect(await app.store.getRun('run-1')).toMatchObject({
      state: 'failed',
      reason: 'ECS no longer knows task t-1',
    });
  });

  it('forwards a cancel request to the backend at once, and cancels the run when its task has stopped', async () => {
    await launchedRun('run-1');
    await mutateRun(app.store, 'run-1', (r) => amend(r, app.clock.now(), { cancelRequested: true }));

    const first = await reconcile();

    expect(first.sync.stopped).toEqual(['run-1']);
    expect(ecs.cancels).toEqual([{ handle: 'ecs:c/run-1', runId: 'run-1', graceSeconds: 30 }]);
    ecs.statuses.set('ecs:c/run-1', {
      state: 'exited',
      exitCode: 143,
      reason: 'the task was stopped on request',
    });

    await reconcile();

    expect(await app.store.getRun('run-1')).toMatchObject({ state: 'cancelled', exitCode: 143 });
    expect(ecs.cancels).toHaveLength(1);
  });

  it('records a cancel the backend does not confirm within its deadline, and cleans up', async () => {
    await launchedRun('run-1');
    await mutateRun(app.store, 'run-1', (r) => requestCancel(r, app.clock.now()));
    await reconcile(); // the stop request goes out; ECS keeps answering "running"
    app.clock.advance(299_000);
    const early = await reconcile();
    expect(early.sync.settled).toEqual([]);

    app.clock.advance(2_000);
    const late = await reconcile();

    expect(late.sync.settled).toEqual(['run-1']);
    const run = await app.store.getRun('run-1');
    expect(run?.state).toBe('failed');
    expect(run?.reason).toContain('was not confirmed by the ecs backend within 300 s');
    expect(ecs.cleanups).toEqual([{ handle: 'ecs:c/run-1', runId: 'run-1' }]);
  });

  it('settles a run past its deadline with what the backend says before timing anything out', async () => {
    await launchedRun('run-done', { timeoutSeconds: 60 });
    await launchedRun('run-stuck', { timeoutSeconds: 60 });
    ecs.statuses.set('ecs:c/run-done', { state: 'exited', exitCode: 0 });
    app.clock.advance(120_000);

    const report = await reconcile();

    expect(await app.store.getRun('run-done')).toMatchObject({ state: 'succeeded' });
    expect(await app.store.getRun('run-stuck')).toMatchObject({ state: 'timed_out' });
    expect(report.reconcile.timedOut).toEqual(['run-stuck']);
  });

  it('keeps going when one backend call fails, and skips self-reporting backends', async () => {
    await launchedRun('run-1');
    await launchedRun('run-2');
    ecs.statuses.set('ecs:c/run-1', new Error('ECS is down'));
    ecs.statuses.set('ecs:c/run-2', { state: 'self_reporting' });
    app.clock.advance(61_000);

    const report = await reconcile();

    expect(ecs.asked.sort()).toEqual(['ecs:c/run-1', 'ecs:c/run-2']);
    expect(report.sync).toEqual({
      advanced: [],
      settled: [],
      stopped: [],
      observed: ['run-2'],
      unknown: ['run-1'],
    });
    expect((await app.store.getRun('run-2'))?.state).toBe('launched');
    // No status_unknown grace is set for the ECS sweep: a failed call changes nothing on the run.
    expect((await app.store.getRun('run-1'))?.statusUnknownSince).toBeUndefined();
  });

  it('never touches a terminal run and re-enqueues a queued run whose message was lost', async () => {
    const run = await launchedRun('run-1');
    await mutateRun(app.store, run.id, (r) =>
      transition(r, 'succeeded', app.clock.now(), { patch: { exitCode: 0 } }),
    );
    const queued = await createQueuedRun(app.store, app.clock, { id: 'run-q' });
    ecs.statuses.set('ecs:c/run-1', { state: 'exited', exitCode: 9 });
    app.clock.advance(61_000);

    const report = await reconcile();

    expect(ecs.asked).toEqual([]);
    expect(report.reconcile.requeued).toEqual([queued.id]);
    expect(await app.store.getRun('run-1')).toMatchObject({ state: 'succeeded', exitCode: 0 });
  });

  it('publishes its findings as CloudWatch metrics (EMF)', async () => {
    await launchedRun('run-late', { timeoutSeconds: 60 });
    app.clock.advance((60 + 30) * 1000 + 1);
    const metrics = new Metrics({ namespace: 'RemoteWorker', serviceName: 'remote-worker' });
    // EMF goes to stdout, where the Lambda runtime hands it to CloudWatch.
    const emitted: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      emitted.push(String(chunk));
      return true;
    });

    const report = await makeReconcileRuns(app.deps, { ...OPTIONS, metrics })().finally(() =>
      write.mockRestore(),
    );

    expect(report.reconcile.timedOut).toEqual(['run-late']);
    const emf = JSON.parse(emitted.find((line) => line.includes('CloudWatchMetrics')) ?? '{}');
    expect(emf.ReconcileTimedOut).toBe(1);
    expect(emf.ReconcileRequeued).toBe(0);
    expect(emf._aws.CloudWatchMetrics[0].Namespace).toBe('RemoteWorker');
  });
});
