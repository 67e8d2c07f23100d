import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newRun, type Run, transition } from '../../shared/domain/run.ts';
import { claimedRun, type RunStore } from '../../shared/ports/run-store.ts';
import type { RunStoreFixture } from './run-store.contract.ts';

let n = 0;
const at = (s = 0) => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString();
const aRun = (): Run => {
  n += 1;
  const run = newRun(
    {
      id: `01CLAIM${String(Date.now())}${String(n).padStart(4, '0')}`,
      kind: 'vm',
      targetId: 'vm-1',
      asset: 'hello/site.yml',
      requestedBy: 'contract-test',
      timeoutSeconds: 600,
    },
    at(),
  );
  // As submit records them: the runner and image chosen then.
  return { ...run, runner: 'ecs', image: 'chrweav/ansible-cloud' };
};

/**
 * RunStore.claimRun, for every adapter (called from the SQLite and DynamoDB
 * contract files beside the RunStore contract): one write takes a queued run
 * to `dispatching` with owner, attempt and launch intent; anything else is
 * answered unchanged.
 *
 * @example
 * runClaimContract('sqlite', makeStore);
 */
export function runClaimContract(name: string, makeStore: () => Promise<RunStoreFixture>): void {
  describe(`RunStore.claimRun contract: ${name}`, () => {
    let fixture: RunStoreFixture;
    let store: RunStore;
    beforeEach(async () => {
      fixture = await makeStore();
      store = fixture.store;
    });
    afterEach(() => fixture.cleanup());

    it('claims a queued run with owner, the next attempt and the launch intent, and reads back the same', async () => {
      const { run } = await store.createRun(aRun());

      const got = await store.claimRun(run.id, { owner: 'dispatcher:1', at: at(5) });

      const expected = claimedRun(run, { owner: 'dispatcher:1', at: at(5) });
      expect(got).toEqual({ run: expected, claimed: true });
      expect(expected).toMatchObject({
        state: 'dispatching',
        owner: 'dispatcher:1',
        attempt: 1,
        version: run.version + 1,
        launch: { backend: 'ecs', intentAt: at(5) },
      });
      expect(await store.getRun(run.id)).toEqual(expected);
      const listed = await store.listRuns({ state: 'dispatching', limit: 100 });
      expect(listed.runs.find((r) => r.id === run.id)).toEqual(expected);
      expect((await store.listActiveRuns(100)).find((r) => r.id === run.id)).toEqual(expected);
    });

    it('lets exactly one of several concurrent claims win', async () => {
      const { run } = await store.createRun(aRun());

      const answers = await Promise.all(
        [1, 2, 3, 4].map((i) => store.claimRun(run.id, { owner: `dispatcher:${i}`, at: at(i) })),
      );

      const winners = answers.filter((a) => a?.claimed === true);
      expect(winners).toHaveLength(1);
      expect((await store.getRun(run.id))?.owner).toBe(winners[0]?.run.owner);
      expect((await store.getRun(run.id))?.version).toBe(run.version + 1);
    });

    it('answers a run that is not queued as stored, unclaimed, and changes nothing', async () => {
      const { run } = await store.createRun(aRun());
      const first = await store.claimRun(run.id, { owner: 'dispatcher:1', at: at(1) });

      const again = await store.claimRun(run.id, { owner: 'dispatcher:2', at: at(2) });

      expect(again).toEqual({ run: first?.run, claimed: false });
      expect(await store.getRun(run.id)).toEqual(first?.run);
    });

    it('never claims a terminal run', async () => {
      const { run } = await store.createRun(aRun());
      const cancelled = await store.updateRun(transition(run, 'cancelled', at(1)), run.version);

      expect(await store.claimRun(run.id, { owner: 'dispatcher:1', at: at(2) })).toEqual({
        run: cancelled,
        claimed: false,
      });
      expect(await store.getRun(run.id)).toEqual(cancelled);
    });

    it('answers undefined for a run that does not exist, and creates nothing', async () => {
      expect(await store.claimRun('01NOSUCHRUN', { owner: 'dispatcher:1', at: at() })).toBeUndefined();
      expect(await store.getRun('01NOSUCHRUN')).toBeUndefined();
    });

    it('takes the next conditional write on the claimed version, which then reads back whole', async () => {
      const { run } = await store.createRun(aRun());
      const claimed = (await store.claimRun(run.id, { owner: 'dispatcher:1', at: at(1) }))?.run;
      if (claimed === undefined) throw new Error('not claimed');

      const launched = transition(claimed, 'launched', at(2), {
        patch: { launch: { backend: 'ecs', intentAt: at(1), handle: 'ecs:c/arn' } },
      });
      await expect(store.updateRun(launched, run.version)).rejects.toThrow(/version/);
      await store.updateRun(launched, claimed.version);

      expect(await store.getRun(run.id)).toEqual(launched);
      expect(launched.history.map((h) => h.state)).toEqual(['queued', 'dispatching', 'launched']);
    });
  });
}
