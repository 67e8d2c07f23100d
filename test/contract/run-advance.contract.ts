import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { amend, newRun, type Run, requestCancel, transition } from '../../shared/domain/run.ts';
import { advancedRun, claimedRun, type RunAdvance, type RunStore } from '../../shared/ports/run-store.ts';
import type { RunStoreFixture } from './run-store.contract.ts';

let n = 0;
const at = (s = 0) => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString();
const TASK = 'ecs:runs/arn:aws:ecs:eu-west-1:123456789012:task/runs/0123456789abcdef';

/** A run as the dispatcher leaves it: launched on ECS, its task recorded (`#v1` when `order` is 1). */
async function launchedRun(store: RunStore, order?: number, extra: Partial<Run> = {}): Promise<Run> {
  n += 1;
  const queued = {
    ...newRun(
      {
        id: `01ADVANCE${String(Date.now())}${String(n).padStart(4, '0')}`,
        kind: 'vm',
        targetId: 'vm-1',
        asset: 'hello/site.yml',
        requestedBy: 'contract-test',
        timeoutSeconds: 600,
      },
      at(),
    ),
    runner: 'ecs' as const,
  };
  const { run } = await store.createRun(queued);
  const claimed = claimedRun(run, { owner: 'dispatcher:1', at: at(1) });
  const handle = order === undefined ? TASK : `${TASK}#v${order}`;
  const launched = {
    ...transition(claimed, 'launched', at(2), {
      patch: { launch: { backend: 'ecs', intentAt: at(1), handle } },
    }),
    ...extra,
  };
  await store.updateRun(claimed, run.version);
  return store.updateRun(launched, claimed.version);
}

const running = (order: number, s = 3): RunAdvance => ({
  attempt: 1,
  task: TASK,
  order,
  from: ['launched'],
  to: 'running',
  at: at(s),
});
const exited = (order: number, s = 4): RunAdvance => ({
  attempt: 1,
  task: TASK,
  order,
  from: ['launched', 'running'],
  to: 'failed',
  at: at(s),
  reason: 'The task exited with code 2',
  exitCode: 2,
});

/**
 * RunStore.advanceRun, for every adapter (called from the SQLite and
 * DynamoDB contract files): one write moves a launched run whose recorded
 * task the advance names, at a lower order, to exactly advancedRun; anything
 * else is answered as stored and changes nothing.
 *
 * @example
 * runAdvanceContract('sqlite', makeStore);
 */
export function runAdvanceContract(
  name: string,
  makeStore: () => Promise<RunStoreFixture>,
  /** DynamoDB: the SDK repeats a write whose response was lost, and the repeat finds its own advance. */
  options: { readonly repeatCountsAsAdvanced: boolean },
): void {
  describe(`RunStore.advanceRun contract: ${name}`, () => {
    let fixture: RunStoreFixture;
    let store: RunStore;
    beforeEach(async () => {
      fixture = await makeStore();
      store = fixture.store;
    });
    afterEach(() => fixture.cleanup());

    it('moves the run on twice, each time to exactly advancedRun, and every read answers the same', async () => {
      const launched = await launchedRun(store, 1);

      const first = await store.advanceRun(launched.id, running(2));
      const afterRunning = advancedRun(launched, running(2));
      expect(first).toEqual({ advanced: true, run: afterRunning });
      expect(afterRunning).toMatchObject({
        state: 'running',
        version: launched.version + 1,
        launch: { backend: 'ecs', intentAt: at(1), handle: `${TASK}#v2` },
      });
      expect(await store.getRun(launched.id)).toEqual(afterRunning);

      const second = await store.advanceRun(launched.id, exited(3));
      const afterExit = advancedRun(afterRunning, exited(3));
      expect(second).toEqual({ advanced: true, run: afterExit });
      expect(afterExit).toMatchObject({
        state: 'failed',
        exitCode: 2,
        reason: 'The task exited with code 2',
      });
      expect(await store.getRun(launched.id)).toEqual(afterExit);
      expect(await store.getRuns([launched.id])).toEqual([afterExit]);
      const listed = await store.listRuns({ state: 'failed', limit: 100 });
      expect(listed.runs.find((r) => r.id === launched.id)).toEqual(afterExit);
      expect((await store.listActiveRuns(100)).map((r) => r.id)).not.toContain(launched.id);
    });

    it('answers the same advance sent again (an SDK retry) with the advanced run and writes nothing more', async () => {
      const launched = await launchedRun(store, 1);
      const first = await store.advanceRun(launched.id, running(2));
      const again = await store.advanceRun(launched.id, running(2));
      const expected = advancedRun(launched, running(2));
      expect(first).toEqual({ advanced: true, run: expected });
      expect(again).toEqual({ advanced: options.repeatCountsAsAdvanced, run: expected });
      expect(await store.getRun(launched.id)).toEqual(expected);
    });

    it('takes any order on a task recorded without one', async () => {
      const launched = await launchedRun(store);
      const got = await store.advanceRun(launched.id, running(0));
      expect(got).toEqual({ advanced: true, run: advancedRun(launched, running(0)) });
    });

    it('changes nothing and answers the run as stored for a duplicate, an older event, another attempt or task, or a state outside `from`', async () => {
      const launched = await launchedRun(store, 5);
      const refused: RunAdvance[] = [
        running(5),
        running(4),
        { ...running(6), attempt: 2 },
        { ...running(6), task: `${TASK}x` },
        { ...running(6), from: ['running'] },
      ];
      for (const advance of refused) {
        expect({ advance, got: await store.advanceRun(launched.id, advance) }).toEqual({
          advance,
          got: { advanced: false, run: launched },
        });
      }
      expect(await store.getRun(launched.id)).toEqual(launched);
    });

    it('leaves a run that must be read alone: a cancel request, a checkout, an account hold, per-run secrets', async () => {
      const holdings: Partial<Run>[] = [
        { credentialLease: 'lease-1' },
        { heldAccount: 'acct-1' },
        { ephemeralSecrets: ['rw/run/x'] },
      ];
      const runs = await Promise.all(holdings.map((extra) => launchedRun(store, 1, extra)));
      const plain = await launchedRun(store, 1);
      const cancelled = await store.updateRun(requestCancel(plain, at(3)), plain.version);
      for (const run of [...runs, cancelled]) {
        expect(await store.advanceRun(run.id, exited(2))).toEqual({ advanced: false, run });
        expect(await store.getRun(run.id)).toEqual(run);
      }
    });

    it('never touches a terminal run, and answers no run for an unknown id', async () => {
      const launched = await launchedRun(store, 1);
      const ended = await store.updateRun(
        transition(launched, 'succeeded', at(3), { patch: { exitCode: 0 } }),
        launched.version,
      );
      expect(await store.advanceRun(ended.id, exited(2))).toEqual({ advanced: false, run: ended });
      expect(await store.getRun(ended.id)).toEqual(ended);
      expect(await store.advanceRun('01NOSUCHRUN0000000000000000', running(2))).toEqual({
        advanced: false,
        run: undefined,
      });
    });

    it('an advanced run is written in full at its version as usual, and then advances again', async () => {
      const launched = await launchedRun(store, 1);
      const advanced = await store.advanceRun(launched.id, running(2));
      if (!advanced.advanced) throw new Error('the advance did not apply');
      // A full write on top (the poller clearing a note, a cancel request …) keeps what the advance wrote.
      const noted = await store.updateRun(
        amend(advanced.run, at(4), { owner: 'sync' }),
        advanced.run.version,
      );
      expect(await store.getRun(launched.id)).toEqual(noted);
      const again = await store.advanceRun(launched.id, exited(3, 5));
      expect(again).toEqual({ advanced: true, run: advancedRun(noted, exited(3, 5)) });
      expect(await store.getRun(launched.id)).toEqual(advancedRun(noted, exited(3, 5)));
    });
  });
}
