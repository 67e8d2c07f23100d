import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Target } from '../../shared/domain/target.ts';
import type { TargetStore } from '../../shared/ports/target-store.ts';

export interface TargetStoreFixture {
  readonly targets: TargetStore;
  cleanup(): Promise<void>;
}

const at = (offsetSeconds = 0): string => new Date(Date.UTC(2026, 0, 1) + offsetSeconds * 1000).toISOString();

function aTarget(id: string, name = id): Target {
  return {
    id,
    kind: 'vm',
    cloud: 'local',
    name,
    address: '10.0.0.1',
    connection: 'ssh',
    createdAt: at(),
    updatedAt: at(),
  };
}

/**
 * The TargetStore contract. Every adapter (SQLite, DynamoDB) runs this same suite.
 *
 * @example
 * targetStoreContract('sqlite', async () => {
 *   const db = openDatabase(':memory:');
 *   return { targets: new SqliteTargetStore({ db }), cleanup: async () => db.close() };
 * });
 */
export function targetStoreContract(name: string, makeStore: () => Promise<TargetStoreFixture>): void {
  describe(`TargetStore contract: ${name}`, () => {
    let fixture: TargetStoreFixture;
    let targets: TargetStore;

    beforeEach(async () => {
      fixture = await makeStore();
      targets = fixture.targets;
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    describe('targets', () => {
      it('puts, reads, lists sorted by id and deletes', async () => {
        await targets.putTarget(aTarget('web-2'));
        await targets.putTarget(aTarget('db-1'));
        await targets.putTarget(aTarget('web-10'));

        expect(await targets.getTarget('db-1')).toEqual(aTarget('db-1'));
        expect((await targets.listTargets()).map((t) => t.id)).toEqual(['db-1', 'web-10', 'web-2']);
        expect(await targets.deleteTarget('db-1')).toBe(true);
        expect(await targets.deleteTarget('db-1')).toBe(false);
        expect(await targets.getTarget('db-1')).toBeUndefined();
        expect((await targets.listTargets()).map((t) => t.id)).toEqual(['web-10', 'web-2']);
      });

      it('replaces a target on a second put', async () => {
        await targets.putTarget(aTarget('vm-1', 'old name'));
        const replacement: Target = { ...aTarget('vm-1', 'new name'), updatedAt: at(60) };

        const stored = await targets.putTarget(replacement);

        expect(stored).toEqual(replacement);
        expect(await targets.getTarget('vm-1')).toEqual(replacement);
        expect(await targets.listTargets()).toHaveLength(1);
      });

      it('keeps the first createdAt when a target is put again', async () => {
        await targets.putTarget(aTarget('vm-2'));

        const stored = await targets.putTarget({ ...aTarget('vm-2'), createdAt: at(99), updatedAt: at(99) });

        expect(stored.createdAt).toBe(at());
        expect((await targets.getTarget('vm-2'))?.createdAt).toBe(at());
      });

      it('answers undefined and false for an unknown target', async () => {
        expect(await targets.getTarget('missing')).toBeUndefined();
        expect(await targets.deleteTarget('missing')).toBe(false);
      });
    });
  });
}
