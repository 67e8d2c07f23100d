import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AppDeps } from '../../../shared/app/deps.ts';
import { dispatchRun } from '../../../shared/app/dispatch.ts';
import { submitRun } from '../../../shared/app/runs.ts';
import { transition } from '../../../shared/domain/run.ts';
import { SubmitRunBody } from '../../../shared/http/request-schemas.ts';
import type { LaunchRequest } from '../../../shared/ports/launcher.ts';
import type { RunStore } from '../../../shared/ports/run-store.ts';
import type { TargetStore } from '../../../shared/ports/target-store.ts';
import { createQueuedRun, makeTestApp, type TestApp, vmTarget } from './harness.ts';

/** The store and target calls dispatch makes, by method, on the real SQLite stores. */
function counting(app: TestApp): { deps: AppDeps; calls: string[] } {
  const calls: string[] = [];
  const store = new Proxy(app.store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(`store.${String(name)}`);
        return value.apply(target, args);
      };
    },
  }) as RunStore;
  const targets: TargetStore = {
    putTarget: (t) => app.targets.putTarget(t),
    listTargets: () => app.targets.listTargets(),
    deleteTarget: (id) => app.targets.deleteTarget(id),
    getTarget: (id) => {
      calls.push('targets.getTarget');
      return app.targets.getTarget(id);
    },
  };
  return { deps: { ...app.deps, store, targets }, calls };
}

describe('dispatchRun with RunStore.claimRun', () => {
  let app: TestApp;
  const requests: LaunchRequest[] = [];

  beforeEach(async () => {
    app = makeTestApp();
    await app.targets.putTarget(vmTarget('vm-1'));
    requests.length = 0;
    app.launcher.beforeLaunch = (request) => {
      requests.push(request);
    };
  });
  afterEach(() => app.close());

  it('claims with one write and no read, reads the target once, and writes `launched`: three store calls', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    const { deps, calls } = counting(app);

    expect(await dispatchRun(deps, run.id, 'dispatcher:1')).toBe('launched');

    expect(calls).toEqual(['store.claimRun', 'targets.getTarget', 'store.updateRun']);
    const stored = await app.store.getRun(run.id);
    expect(stored?.history.map((h) => h.state)).toEqual(['queued', 'dispatching', 'launched']);
    expect(stored).toMatchObject({ attempt: 1, owner: 'dispatcher:1', launch: { backend: 'local' } });
  });

  it('tells the launcher a first delivery is no redelivery and hands it the target it read', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });

    await dispatchRun(app.deps, run.id, 'dispatcher:1');

    expect(requests).toHaveLength(1);
    expect(requests[0]?.redelivery).toBe(false);
    expect(requests[0]?.known?.target).toEqual(vmTarget('vm-1'));
  });

  it('tells the launcher a run left dispatching is a redelivery, on the same attempt', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    await app.store.updateRun(
      transition(run, 'dispatching', app.clock.now(), {
        patch: {
          owner: 'dispatcher:dead',
          attempt: 1,
          launch: { backend: 'local', intentAt: app.clock.now() },
        },
      }),
      run.version,
    );

    expect(await dispatchRun(app.deps, run.id, 'dispatcher:2')).toBe('launched');

    expect(requests.map((r) => [r.redelivery, r.run.attempt, r.run.owner])).toEqual([
      [true, 1, 'dispatcher:2'],
    ]);
  });

  it('records the runner the settings now choose when it differs from the one chosen at submit', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    await app.store.updateRun({ ...run, image: 'old/image:1', version: run.version + 1 }, run.version);

    expect(await dispatchRun(app.deps, run.id, 'dispatcher:1')).toBe('launched');

    expect((await app.store.getRun(run.id))?.image).toBe('chrweav/ansible-winrm:latest');
    expect(requests[0]?.image).toBe('chrweav/ansible-winrm:latest');
  });

  it('undoes the claim of a run whose managed account is in use: queued on its old attempt, no history added', async () => {
    const submit = async () =>
      (
        await submitRun(
          app.deps,
          SubmitRunBody.parse({
            kind: 'vm',
            targetId: 'vm-1',
            asset: 'hello/site.yml',
            managedAccount: 'root',
          }),
          'alice',
        )
      ).run;
    const first = await submit();
    const second = await submit();
    await dispatchRun(app.deps, first.id, 'd-1');
    const before = await app.store.getRun(second.id);

    for (let i = 0; i < 3; i++) expect(await dispatchRun(app.deps, second.id, 'd-2')).toBe('deferred');

    const after = await app.store.getRun(second.id);
    expect(after).toMatchObject({ state: 'queued', attempt: before?.attempt, history: before?.history });
    expect(after?.owner).toBeUndefined();
    expect(after?.version).toBeGreaterThan(before?.version ?? 0);
  });
});
