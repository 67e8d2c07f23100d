import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InProcessLaunchBudgets } from '../../../shared/adapters/local/launch-budget.ts';
import type { AppDeps } from '../../../shared/app/deps.ts';
import { dispatchRun } from '../../../shared/app/dispatch.ts';
import { cancelRun } from '../../../shared/app/runs.ts';
import { buildLaunchGate } from '../../../shared/composition/launch-budget.ts';
import { loadSettings } from '../../../shared/config/settings.ts';
import { LauncherUnavailableError } from '../../../shared/domain/errors.ts';
import { createQueuedRun, makeTestApp, offeredRunIds as offered, type TestApp, vmTarget } from './harness.ts';

describe('launchWithinBudget (through dispatchRun)', () => {
  let app: TestApp;
  let deps: AppDeps;

  beforeEach(async () => {
    app = makeTestApp();
    await app.targets.putTarget(vmTarget('vm-1'));
    // The relay runner stands in for a cloud backend: a budget of 2 at once, then 1 per second.
    deps = {
      ...app.deps,
      launchBudget: {
        store: new InProcessLaunchBudgets(),
        scopes: { local: { key: 'local#test', budget: { perSecond: 1, burst: 2 } } },
        random: () => 0,
      },
    };
  });
  afterEach(() => app.close());

  it('launches within the burst, then leaves the rest dispatching with the waiting reason and a delayed message', async () => {
    const runs = await Promise.all(
      ['r1', 'r2', 'r3', 'r4'].map((id) => createQueuedRun(app.store, app.clock, { id })),
    );
    const outcomes = [];
    for (const run of runs) outcomes.push(await dispatchRun(deps, run.id, `d-${run.id}`));

    expect(outcomes).toEqual(['launched', 'launched', 'deferred', 'deferred']);
    expect(app.launcher.launches.map((l) => l.runId)).toEqual(['r1', 'r2']);
    for (const id of ['r3', 'r4']) {
      expect(await app.store.getRun(id)).toMatchObject({
        state: 'dispatching',
        attempt: 1,
        reason: 'waiting: relay launch budget',
      });
    }
    // Each is offered again when its token is due, one token apart, not before.
    expect(await offered(app)).toEqual([]);
    app.clock.advance(1000);
    expect(await offered(app)).toEqual(['r3']);
    app.clock.advance(1000);
    expect(await offered(app)).toEqual(['r4']);
  });

  it('a waiting run launches once the bucket refills, with the same attempt, and the reason is gone', async () => {
    for (const id of ['r1', 'r2', 'r3']) await createQueuedRun(app.store, app.clock, { id });
    for (const id of ['r1', 'r2', 'r3']) await dispatchRun(deps, id, `d-${id}`);
    app.clock.advance(1000);

    expect(await dispatchRun(deps, 'r3', 'd-r3-again')).toBe('launched');
    const run = await app.store.getRun('r3');
    expect(run).toMatchObject({ state: 'launched', attempt: 1 });
    expect(run?.reason).toBeUndefined();
    expect(app.launcher.launchesFor('r3')).toHaveLength(1);
  });

  it('a throttled launch waits the same way: not failed, not retried by redelivery, launched once later', async () => {
    await createQueuedRun(app.store, app.clock, { id: 'r1' });
    const throttle = Object.assign(new Error('Rate exceeded'), {
      name: 'ThrottlingException',
      $metadata: { httpStatusCode: 400 },
    });
    app.launcher.failures.push(
      new LauncherUnavailableError('ECS RunTask failed, will retry', { cause: throttle }),
    );

    expect(await dispatchRun(deps, 'r1', 'd-1')).toBe('deferred');
    expect(await app.store.getRun('r1')).toMatchObject({
      state: 'dispatching',
      reason: 'waiting: relay launch budget',
    });
    app.clock.advance(1000);
    expect(await offered(app)).toEqual(['r1']);
    expect(await dispatchRun(deps, 'r1', 'd-2')).toBe('launched');
    expect(app.launcher.tasks.size).toBe(1);
  });

  it('other launch errors are not swallowed', async () => {
    await createQueuedRun(app.store, app.clock, { id: 'r1' });
    app.launcher.failures.push(new LauncherUnavailableError('ECONNRESET'));
    await expect(dispatchRun(deps, 'r1', 'd-1')).rejects.toThrow('ECONNRESET');
    expect(await offered(app)).toEqual([]);
  });

  it('a run cancelled while it waits is cancelled on its next offer, never launched', async () => {
    for (const id of ['r1', 'r2', 'r3']) await createQueuedRun(app.store, app.clock, { id });
    for (const id of ['r1', 'r2', 'r3']) await dispatchRun(deps, id, `d-${id}`);
    await cancelRun(deps, 'r3');
    app.clock.advance(1000);

    expect(await dispatchRun(deps, 'r3', 'd-r3-again')).toBe('settled');
    expect((await app.store.getRun('r3'))?.state).toBe('cancelled');
    expect(app.launcher.launchesFor('r3')).toEqual([]);
  });
});

describe('buildLaunchGate', () => {
  it('keys each backend by its scope, with the published defaults, and leaves out a backend set to 0', () => {
    const settings = loadSettings({
      env: {
        AZURE_SUBSCRIPTION_ID: 'sub-1',
        AZURE_LOCATION: 'westeurope',
        LAUNCH_BUDGET_GCP_PER_SECOND: '0',
      },
    });
    const gate = buildLaunchGate(settings, { account: '123456789012', region: 'eu-west-1' });
    expect(gate.scopes).toEqual({
      ecs: { key: 'ecs#123456789012/eu-west-1', budget: { perSecond: 20, burst: 100 } },
      aci: { key: 'aci#sub-1/westeurope', budget: { perSecond: 10, burst: 200 } },
      kubernetes: { key: 'kubernetes#remote-worker', budget: { perSecond: 5, burst: 10 } },
    });
  });

  it('refuses a bad budget setting at start-up, naming the key', () => {
    expect(() => loadSettings({ env: { LAUNCH_BUDGET_ECS_BURST: '0' } })).toThrow(/launch_budget_ecs_burst/);
  });
});
