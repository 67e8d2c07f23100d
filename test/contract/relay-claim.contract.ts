import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { settleRun } from '../../shared/app/run-updates.ts';
import { amend, type Run, requestCancel, transition } from '../../shared/domain/run.ts';
import type { RunStore } from '../../shared/ports/run-store.ts';
import { createQueuedRun, ManualClock, T0 } from '../unit/app/harness.ts';

/**
 * RunStore.claimRelayRun and getRuns, the same for every adapter: the claim
 * is one conditional write of the record a relay message was sent for, and
 * whatever it does not apply to comes back unchanged.
 */
export function relayClaimContract(
  name: string,
  open: () => Promise<{ store: RunStore; cleanup: () => Promise<void> }>,
): void {
  describe(`RunStore relay claim: ${name}`, () => {
    let store: RunStore;
    let cleanup: () => Promise<void>;
    const clock = new ManualClock(T0);

    beforeEach(async () => {
      ({ store, cleanup } = await open());
    });
    afterEach(async () => cleanup());

    /** The dispatcher's writes up to its send to the relay queue: claimed, launch intent `local`. */
    const intent = async (id: string): Promise<Run> => {
      const run = await createQueuedRun(store, clock, { id });
      const claimed = transition(run, 'dispatching', clock.now(), {
        patch: { owner: 'dispatcher:m-1', attempt: 1 },
      });
      const withIntent = amend(claimed, clock.now(), { launch: { backend: 'local', intentAt: clock.now() } });
      return store.updateRun(withIntent, run.version);
    };
    /** The dispatcher's write after its send, as dispatchRun makes it. */
    const dispatcherLaunched = (sent: Run) =>
      settleRun(
        store,
        sent.id,
        (r) =>
          r.state === 'dispatching'
            ? transition(r, 'launched', clock.now(), {
                patch: { launch: { backend: 'local', intentAt: T0, handle: 'relay:relay' } },
              })
            : r,
        sent,
      );
    const claim = (sent: Run, owner = 'relay:r1') =>
      store.claimRelayRun(sent.id, { owner, at: clock.now(), sentVersion: sent.version });

    it('claims a run still dispatching (before the dispatcher records launched), in one write', async () => {
      const sent = await intent('run-1');

      const result = await claim(sent);

      expect(result.claimed).toBe(true);
      expect(result.run).toMatchObject({ state: 'launched', owner: 'relay:r1', version: sent.version + 2 });
      expect(await store.getRun('run-1')).toEqual(result.run);
    });

    it("leaves the relay's claim in place when the dispatcher's launched write comes after it", async () => {
      const sent = await intent('run-2');
      const claimed = await claim(sent);

      const after = await dispatcherLaunched(sent);

      expect(after).toEqual(claimed.run);
      expect(await store.getRun('run-2')).toMatchObject({ state: 'launched', owner: 'relay:r1' });
    });

    it('claims a run the dispatcher has already recorded launched', async () => {
      const sent = await intent('run-3');
      await dispatcherLaunched(sent);

      const result = await claim(sent);

      expect(result).toMatchObject({
        claimed: true,
        run: { state: 'launched', owner: 'relay:r1', version: sent.version + 2 },
      });
    });

    it('claims a message once: a second delivery, at this relay or another, answers the claimed run', async () => {
      const sent = await intent('run-4');
      const first = await claim(sent, 'relay:r1');

      const again = await claim(sent, 'relay:r1');
      const other = await claim(sent, 'relay:r2');

      expect(again).toEqual({ claimed: false, run: first.run });
      expect(other).toEqual({ claimed: false, run: first.run });
    });

    it('changes nothing when the record has moved on since the send (a cancel), and answers it', async () => {
      const sent = await intent('run-5');
      const cancelled = await store.updateRun(requestCancel(sent, clock.now()), sent.version);

      const result = await claim(sent);

      expect(result).toEqual({ claimed: false, run: cancelled });
      expect(await store.getRun('run-5')).toEqual(cancelled);
    });

    it('answers no run for an id with none', async () => {
      expect(await store.claimRelayRun('nope', { owner: 'relay:r1', at: T0, sentVersion: 3 })).toEqual({
        claimed: false,
        run: undefined,
      });
    });

    it('takes the next write from the claimed run, and keeps it', async () => {
      const result = await claim(await intent('run-6'));
      if (!result.claimed) throw new Error('the claim did not apply');
      const claimed = result.run;
      const running = transition(claimed, 'running', clock.now(), {
        patch: { launch: { backend: 'local', intentAt: T0, handle: 'relay:r1/h' } },
      });

      await store.updateRun(running, claimed.version);

      expect(await store.getRun('run-6')).toEqual(running);
    });

    it('reads several runs in one call, claims included, leaving out ids with no run', async () => {
      const a = await intent('run-7');
      const b = await createQueuedRun(store, clock, { id: 'run-8' });
      const { run: claimedA } = await claim(a);

      const runs = await store.getRuns(['run-8', 'missing', 'run-7']);

      expect(runs).toEqual([claimedA, b]);
      expect(await store.getRuns([])).toEqual([]);
    });
  });
}
