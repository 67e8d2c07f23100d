import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LaunchSlotStore } from '../../shared/ports/launch-cap.ts';

export interface SlotFixture {
  readonly slots: LaunchSlotStore;
  /** A second store on the same data (another container, another connection). */
  readonly other: LaunchSlotStore;
  cleanup(): Promise<void>;
}

/**
 * The LaunchSlotStore contract, run against every adapter (SQLite, DynamoDB
 * on moto): at most `cap` holders per scope, under concurrency and across
 * stores; acquire and release idempotent on the run id; scopes independent.
 */
export function launchSlotsContract(name: string, make: () => Promise<SlotFixture>): void {
  describe(`LaunchSlotStore contract: ${name}`, () => {
    let f: SlotFixture;
    let scope: string;
    let n = 0;
    beforeEach(async () => {
      f = await make();
      n += 1;
      scope = `gcp#project-${n}/europe-west1`;
    });
    afterEach(() => f.cleanup());

    it('holds up to the cap, refuses beyond it, and lists the holders', async () => {
      expect(await f.slots.acquire(scope, 2, 'r1')).toBe(true);
      expect(await f.other.acquire(scope, 2, 'r2')).toBe(true);
      expect(await f.slots.acquire(scope, 2, 'r3')).toBe(false);
      expect(await f.other.holders(scope)).toEqual(['r1', 'r2']);
    });

    it('acquiring again as a holder succeeds with the cap full and takes nothing more', async () => {
      await f.slots.acquire(scope, 2, 'r1');
      await f.slots.acquire(scope, 2, 'r2');
      expect(await f.other.acquire(scope, 2, 'r2')).toBe(true);
      expect(await f.slots.holders(scope)).toEqual(['r1', 'r2']);
    });

    it('a released slot is taken by the next run; releasing twice, or a run that holds none, is harmless', async () => {
      await f.slots.acquire(scope, 1, 'r1');
      expect(await f.slots.acquire(scope, 1, 'r2')).toBe(false);
      await f.other.release(scope, 'r1');
      await f.other.release(scope, 'r1');
      await f.slots.release(scope, 'never-held');
      expect(await f.slots.acquire(scope, 1, 'r2')).toBe(true);
      expect(await f.slots.holders(scope)).toEqual(['r2']);
    });

    it('keeps scopes apart', async () => {
      await f.slots.acquire(scope, 1, 'r1');
      expect(await f.slots.acquire(`${scope}-b`, 1, 'r2')).toBe(true);
      await f.slots.release(`${scope}-b`, 'r1');
      expect(await f.slots.holders(scope)).toEqual(['r1']);
      expect(await f.slots.holders('kubernetes#empty')).toEqual([]);
    });

    it('a cap lowered below what is held keeps the holders and admits nobody new', async () => {
      for (const id of ['r1', 'r2', 'r3']) await f.slots.acquire(scope, 3, id);
      expect(await f.slots.acquire(scope, 2, 'r3')).toBe(true);
      expect(await f.slots.acquire(scope, 2, 'r4')).toBe(false);
    });

    it('never grants more than the cap to concurrent acquires from two stores', async () => {
      const ids = Array.from({ length: 12 }, (_, i) => `c${String(i).padStart(2, '0')}`);
      const granted = await Promise.all(
        ids.map((id, i) => (i % 2 === 0 ? f.slots : f.other).acquire(scope, 5, id)),
      );
      expect(granted.filter(Boolean)).toHaveLength(5);
      const holders = await f.slots.holders(scope);
      expect(holders).toEqual(ids.filter((_, i) => granted[i]));
    });
  });
}
