import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reconcileRuns } from '../../../shared/app/reconcile.ts';
import { settleRun } from '../../../shared/app/run-updates.ts';
import { transition } from '../../../shared/domain/run.ts';
import { decodeRunMessage } from '../../../shared/domain/run-message.ts';
import { createQueuedRun, makeTestApp, markLaunched, type TestApp, vmTarget } from './harness.ts';

const OPTIONS = { requeueAfterSeconds: 60, deadlineGraceSeconds: 30 } as const;

describe('reconcileRuns', () => {
  let app: TestApp;

  const queuedMessages = async (): Promise<string[]> => {
    const received = await app.dispatchQueue.receive({ max: 10 });
    return received.map((m) => decodeRunMessage(m.body)?.runId ?? `poison:${m.body}`);
  };

  beforeEach(async () => {
    app = makeTestApp({ launcherBackend: 'ecs' });
    await app.targets.putTarget(vmTarget('vm-1'));
  });
  afterEach(() => app.close());

  it('re-enqueues a queued run older than requeueAfterSeconds and leaves a young one alone', async () => {
    const old = await createQueuedRun(app.store, app.clock, { id: 'run-old' });
    app.clock.advance(50_000);
    const young = await createQueuedRun(app.store, app.clock, { id: 'run-young' });
    app.clock.advance(11_000); // old: 61 s without progress; young: 11 s

    const report = await reconcileRuns(app.deps, OPTIONS);

    expect(report).toEqual({ requeued: [old.id], timedOut: [] });
    expect(await queuedMessages()).toEqual([old.id]);
    expect(await app.store.getRun(young.id)).toEqual(young);
    // The old run is touched (version + 1, updatedAt now) so the next sweep waits again.
    expect(await app.store.getRun(old.id)).toEqual({
      ...old,
      version: old.version + 1,
      updatedAt: app.clock.now(),
    });
  });

  it('does not re-enqueue the same run again on the next sweep', async () => {
    const old = await createQueuedRun(app.store, app.clock, { id: 'run-old' });
    app.clock.advance(61_000);
    await reconcileRuns(app.deps, OPTIONS);

    app.clock.advance(1_000);
    const second = await reconcileRuns(app.deps, OPTIONS);

    expect(second.requeued).toEqual([]);
    expect(await queuedMessages()).toEqual([old.id]);
  });

  it('times out a run past its deadline and grace, stopping and cleaning up its backend task', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1', timeoutSeconds: 60 });
    await markLaunched(app.store, app.clock, run, { backend: 'ecs', handle: 'ecs:cluster/task-1' });
    app.clock.advance((60 + 30) * 1000 + 1);

    const report = await reconcileRuns(app.deps, OPTIONS);

    expect(report).toEqual({ requeued: [], timedOut: [run.id] });
    expect(await app.store.getRun(run.id)).toMatchObject({
      state: 'timed_out',
      reason: 'No runner settled the run within its 60 s timeout (last state launched)',
    });
    expect(app.launcher.cancels).toEqual([{ handle: 'ecs:cluster/task-1', runId: run.id, graceSeconds: 0 }]);
    expect(app.launcher.cleanups).toEqual([{ handle: 'ecs:cluster/task-1', runId: run.id }]);
  });

  it('leaves a launched run alone until its deadline plus grace has passed', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1', timeoutSeconds: 60 });
    const launched = await markLaunched(app.store, app.clock, run, { backend: 'ecs', handle: 'ecs:c/t' });
    app.clock.advance((60 + 30) * 1000);

    const report = await reconcileRuns(app.deps, OPTIONS);

    expect(report).toEqual({ requeued: [], timedOut: [] });
    expect(await app.store.getRun(run.id)).toEqual(launched);
    expect(app.launcher.cancels).toEqual([]);
  });

  it('never touches a terminal run', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1', timeoutSeconds: 60 });
    await markLaunched(app.store, app.clock, run, { backend: 'ecs', handle: 'ecs:c/t' });
    const done = await settleRun(app.store, run.id, (r) =>
      transition(r, 'succeeded', app.clock.now(), { patch: { exitCode: 0 } }),
    );
    app.clock.advance(24 * 3600 * 1000);

    const report = await reconcileRuns(app.deps, OPTIONS);

    expect(report).toEqual({ requeued: [], timedOut: [] });
    expect(await app.store.getRun(run.id)).toEqual(done);
    expect(await queuedMessages()).toEqual([]);
    expect(app.launcher.cancels).toEqual([]);
    expect(app.launcher.cleanups).toEqual([]);
  });

  it('times out a queued run that is past its deadline instead of re-enqueueing it forever', async () => {
    // deadlineOf counts a never-claimed run from its creation; DESIGN.md: "Runs stuck in a
    // non-terminal state past their deadline are … timed out". With the dispatcher down for
    // longer than timeout + grace, every sweep re-enqueues the run and none ever times it out.
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1', timeoutSeconds: 60 });
    app.clock.advance((60 + 30) * 1000 + 1);

    const report = await reconcileRuns(app.deps, OPTIONS);

    expect(report.timedOut).toEqual([run.id]);
    expect(await app.store.getRun(run.id)).toMatchObject({ state: 'timed_out' });
  });
});
