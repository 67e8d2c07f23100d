import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  closeDatabase,
  openDatabase,
  type SqliteDatabase,
} from '../../../shared/adapters/sqlite/database.ts';
import { SqliteRunStore } from '../../../shared/adapters/sqlite/run-store.ts';
import { mutateRun, settleRun } from '../../../shared/app/run-updates.ts';
import { amend, newRun, type Run, transition } from '../../../shared/domain/run.ts';
import type { RunStore } from '../../../shared/ports/run-store.ts';

const at = (s: number) => new Date(Date.UTC(2026, 11, 3, 12, 0, s)).toISOString();

/**
 * mutateRun over a real SQLite store whose reads are counted: a write that
 * loses its version check is retried from the run the store's
 * RunConflictError carries, with no read of its own.
 */
describe('mutateRun after a lost write', () => {
  let db: SqliteDatabase;
  let store: SqliteRunStore;
  let reads: number;
  let counted: RunStore;

  beforeEach(() => {
    db = openDatabase(':memory:');
    store = new SqliteRunStore({ db });
    reads = 0;
    // Every call goes to the store itself (its private fields need it as `this`); reads are counted.
    counted = new Proxy(store, {
      get(target, key) {
        if (key === 'getRun') {
          return (id: string) => {
            reads += 1;
            return target.getRun(id);
          };
        }
        const value = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as RunStore;
  });
  afterEach(() => closeDatabase(db));

  async function storedRun(): Promise<Run> {
    const draft = newRun(
      { id: 'run-1', kind: 'vm', targetId: 't', asset: 'a.yml', requestedBy: 'test', timeoutSeconds: 60 },
      at(0),
    );
    return (await store.createRun(draft)).run;
  }

  it('retries from the stored run the conflict names, reading nothing', async () => {
    const seen = await storedRun();
    // Someone else writes first: `seen` is now one version behind.
    const other = await store.updateRun(amend(seen, at(1), { owner: 'other' }), seen.version);

    const written = await mutateRun(counted, seen.id, (r) => amend(r, at(2), { image: 'ours:1' }), seen);

    expect(reads).toBe(0);
    expect(written.version).toBe(other.version + 1);
    expect(written.owner).toBe('other');
    expect(written.image).toBe('ours:1');
    expect(await store.getRun(seen.id)).toEqual(written);
  });

  it('answers the stored run when the conflict shows there is nothing left to change', async () => {
    const seen = await storedRun();
    const cancelled = await store.updateRun(
      transition(seen, 'cancelled', at(1), { reason: 'user asked' }),
      seen.version,
    );

    const settled = await settleRun(
      counted,
      seen.id,
      (r) => transition(r, 'dispatching', at(2), { patch: { owner: 'dispatcher' } }),
      seen,
    );

    expect(reads).toBe(0);
    expect(settled).toEqual(cancelled);
  });

  it('still reads when it has no run to start from', async () => {
    const seen = await storedRun();

    await mutateRun(counted, seen.id, (r) => amend(r, at(1), { owner: 'me' }));

    expect(reads).toBe(1);
  });
});
