import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InProcessLaunchBudgets } from '../../../shared/adapters/local/launch-budget.ts';
import { SqliteLaunchSlots } from '../../../shared/adapters/sqlite/launch-slots.ts';
import { endRun } from '../../../shared/app/credentials.ts';
import type { AppDeps } from '../../../shared/app/deps.ts';
import { dispatchRun } from '../../../shared/app/dispatch.ts';
import { reconcileRuns } from '../../../shared/app/reconcile.ts';
import { settleRun } from '../../../shared/app/run-updates.ts';
import { cancelRun } from '../../../shared/app/runs.ts';
import { buildLaunchGate } from '../../../shared/composition/launch-budget.ts';
import { loadSettings } from '../../../shared/config/settings.ts';
import { transition } from '../../../shared/domain/run.ts';
import { createQueuedRun, makeTestApp, offeredRunIds as offered, type TestApp, vmTarget } from './harness.ts';

const SCOPE = 'local#test';
const OPTIONS = { requeueAfterSeconds: 60, deadlineGraceSeconds: 60 };

describe('launch caps (through dispatchRun, with the SQLite slot store)', () => {
  let app: TestApp;
  let deps: AppDeps;
  let slots: SqliteLaunchSlots;

  beforeEach(async () => {
    app = makeTestApp();
    await app.targets.putTarget(vmTarget('vm-1'));
    slots = new SqliteLaunchSlots({ db: app.db });
    // The relay runner stands in for a capped cloud backend: 2 at once, no budget.
    deps = {
      ...app.deps,
      launchBudget: {
        store: new InProcessLaunchBudgets(),
        scopes: {},
        slots,
        caps: { local: { key: SCOPE, cap: 2 } },
        capWaitSeconds: 5,
        random: () => 0,
      },
    };
  });
  afterEach(() => app.close());

  const succeed = (id: string) =>
    endRun(deps, id, (r) =>
      transition(transition(r, 'running', app.clock.now()), 'succeeded', app.clock.now()),
    );

  it('launches up to the cap; the rest wait dispatching with the reason and a delayed message, holding no slot', async () => {
    for (const id of ['r1', 'r2', 'r3', 'r4']) await createQueuedRun(app.store, app.clock, { id });
    const outcomes = [];
    for (const id of ['r1', 'r2', 'r3', 'r4']) outcomes.push(await dispatchRun(deps, id, `d-${id}`));

    expect(outcomes).toEqual(['launched', 'launched', 'deferred', 'deferred']);
    expect(app.launcher.launches.map((l) => l.runId)).toEqual(['r1', 'r2']);
    expect(await slots.holders(SCOPE)).toEqual(['r1', 'r2']);
    for (const id of ['r3', 'r4']) {
      expect(await app.store.getRun(id)).toMatchObject({
        state: 'dispatching',
        attempt: 1,
        reason: 'waiting: local running tasks',
      });
    }
    expect(await offered(app)).toEqual([]);
    app.clock.advance(5000);
    expect((await offered(app)).sort()).toEqual(['r3', 'r4']);
  });

  it('a slot freed by a run that ended is taken by a waiting run, launched once with the same attempt', async () => {
    for (const id of ['r1', 'r2', 'r3']) await createQueuedRun(app.store, app.clock, { id });
    for (const id of ['r1', 'r2', 'r3']) await dispatchRun(deps, id, `d-${id}`);
    app.clock.advance(5000);
    // Still full: offered again, waits again.
    expect(await dispatchRun(deps, 'r3', 'd-r3-2')).toBe('deferred');

    await succeed('r1');
    expect(await slots.holders(SCOPE)).toEqual(['r2']);
    expect(await dispatchRun(deps, 'r3', 'd-r3-3')).toBe('launched');

    const r3 = await app.store.getRun('r3');
    expect(r3).toMatchObject({ state: 'launched', attempt: 1 });
    expect(r3?.reason).toBeUndefined();
    expect(app.launcher.launchesFor('r3')).toHaveLength(1);
    expect(await slots.holders(SCOPE)).toEqual(['r2', 'r3']);
  });

  it('a redelivered dispatch of a run holding a slot takes no second slot', async () => {
    for (const id of ['r1', 'r2']) await createQueuedRun(app.store, app.clock, { id });
    // r1 holds a slot but its launch failed transiently (the message comes back).
    app.launcher.failures.push(new Error('ECONNRESET'));
    await expect(dispatchRun(deps, 'r1', 'd-1')).rejects.toThrow('ECONNRESET');
    expect(await dispatchRun(deps, 'r2', 'd-2')).toBe('launched');
    expect(await dispatchRun(deps, 'r1', 'd-1-again')).toBe('launched');
    expect(await slots.holders(SCOPE)).toEqual(['r1', 'r2']);
  });

  it('a run cancelled while it waits is cancelled on its next offer, never launched, holding nothing', async () => {
    for (const id of ['r1', 'r2', 'r3']) await createQueuedRun(app.store, app.clock, { id });
    for (const id of ['r1', 'r2', 'r3']) await dispatchRun(deps, id, `d-${id}`);
    await cancelRun(deps, 'r3');
    app.clock.advance(5000);

    expect(await dispatchRun(deps, 'r3', 'd-r3-again')).toBe('settled');
    expect((await app.store.getRun('r3'))?.state).toBe('cancelled');
    expect(app.launcher.launchesFor('r3')).toEqual([]);
    expect(await slots.holders(SCOPE)).toEqual(['r1', 'r2']);
  });

  it('the reconciler prunes a slot left by a run that ended without letting go, and keeps the active ones', async () => {
    for (const id of ['r1', 'r2', 'r3']) await createQueuedRun(app.store, app.clock, { id });
    for (const id of ['r1', 'r2', 'r3']) await dispatchRun(deps, id, `d-${id}`);
    // A crash between r1's end and its release: the terminal state is written, the slot kept.
    await settleRun(app.store, 'r1', (r) => transition(r, 'failed', app.clock.now(), { reason: 'crashed' }));
    expect(await slots.acquire(SCOPE, 3, 'gone-run')).toBe(true); // a run whose record is gone
    expect(await dispatchRun(deps, 'r3', 'd-r3-2')).toBe('deferred');

    const report = await reconcileRuns(deps, OPTIONS);

    expect(report.prunedSlots).toEqual(['gone-run', 'r1']);
    expect(await slots.holders(SCOPE)).toEqual(['r2']);
    expect(await dispatchRun(deps, 'r3', 'd-r3-3')).toBe('launched');
    expect((await reconcileRuns(deps, OPTIONS)).prunedSlots).toBeUndefined();
  });
});

describe('buildLaunchGate caps', () => {
  it('caps Cloud Run executions at 1000 per project/region and Kubernetes pods at 100 per namespace by default', () => {
    const settings = loadSettings({ env: { GCP_PROJECT_ID: 'p', GCP_REGION: 'europe-west1' } });
    const gate = buildLaunchGate(settings, {}, undefined, new SqliteLaunchSlots({ db: makeTestApp().db }));
    expect(gate.caps).toEqual({
      gcp: { key: 'gcp#p/europe-west1', cap: 1000 },
      kubernetes: { key: 'kubernetes#remote-worker', cap: 100 },
    });
    expect(gate.capWaitSeconds).toBe(10);
  });

  it('leaves out a backend whose cap is 0, and caps nothing without a slot store', () => {
    const settings = loadSettings({ env: { LAUNCH_CAP_KUBERNETES_PODS: '0' } });
    const db = makeTestApp().db;
    expect(
      Object.keys(buildLaunchGate(settings, {}, undefined, new SqliteLaunchSlots({ db })).caps ?? {}),
    ).toEqual(['gcp']);
    expect(buildLaunchGate(settings, {}).caps).toBeUndefined();
  });

  it('refuses a bad cap setting at start-up, naming the key', () => {
    expect(() => loadSettings({ env: { LAUNCH_CAP_GCP_RUNNING_EXECUTIONS: '-1' } })).toThrow(
      /launch_cap_gcp_running_executions/,
    );
  });
});
