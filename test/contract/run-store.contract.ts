import { randomInt } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  IdempotencyMismatchError,
  NotFoundError,
  RunConflictError,
  ValidationError,
} from '../../shared/domain/errors.ts';
import { type NewRun, newRun, type Run, transition } from '../../shared/domain/run.ts';
import type { RunStore } from '../../shared/ports/run-store.ts';

export interface RunStoreFixture {
  readonly store: RunStore;
  cleanup(): Promise<void>;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
let lastMs = 0;

/** ULID with a strictly increasing time part, so creation order is id order even within one millisecond. */
function ulid(): string {
  lastMs = Math.max(Date.now(), lastMs + 1);
  let time = '';
  for (let t = lastMs, i = 0; i < 10; i += 1, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  let random = '';
  for (let i = 0; i < 16; i += 1) random += CROCKFORD[randomInt(32)];
  return time + random;
}

const at = (offsetSeconds = 0): string => new Date(Date.UTC(2026, 0, 1) + offsetSeconds * 1000).toISOString();

function aRun(overrides: Partial<NewRun> = {}): Run {
  return newRun(
    {
      id: ulid(),
      kind: 'vm',
      targetId: 'vm-1',
      asset: 'hello/site.yml',
      extraVars: { greeting: 'hi' },
      requestedBy: 'contract-test',
      timeoutSeconds: 600,
      ...overrides,
    },
    at(),
  );
}

/** Walk every page; fails on a repeated cursor instead of looping forever. */
async function walk(
  store: RunStore,
  query: { batchId?: string; state?: Run['state'] },
  limit: number,
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  const cursors = new Set<string>();
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await store.listRuns(
      cursor === undefined ? { ...query, limit } : { ...query, limit, cursor },
    );
    pages += 1;
    expect(page.runs.length).toBeLessThanOrEqual(limit);
    ids.push(...page.runs.map((r) => r.id));
    cursor = page.nextCursor;
    if (cursor !== undefined) {
      expect(cursors.has(cursor)).toBe(false);
      cursors.add(cursor);
    }
  } while (cursor !== undefined);
  return { ids, pages };
}

/**
 * The RunStore contract. Every adapter (SQLite, DynamoDB) runs this same suite.
 *
 * @example
 * runStoreContract('sqlite', async () => {
 *   const db = openDatabase(':memory:');
 *   return { store: new SqliteRunStore({ db }), cleanup: async () => db.close() };
 * });
 */
export function runStoreContract(name: string, makeStore: () => Promise<RunStoreFixture>): void {
  describe(`RunStore contract: ${name}`, () => {
    let fixture: RunStoreFixture;
    let store: RunStore;

    beforeEach(async () => {
      fixture = await makeStore();
      store = fixture.store;
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    describe('createRun / getRun', () => {
      it('stores a run and reads it back unchanged', async () => {
        const run = aRun({ batchId: 'b-1', secrets: [{ var: 'db_password', secret: 'db-admin' }] });

        const result = await store.createRun(run);

        expect(result).toEqual({ run, created: true });
        expect(await store.getRun(run.id)).toEqual(run);
      });

      it('answers undefined for an unknown id', async () => {
        expect(await store.getRun(ulid())).toBeUndefined();
      });

      it('refuses a second run with the same id', async () => {
        const run = aRun();
        await store.createRun(run);

        await expect(store.createRun({ ...run, asset: 'other.yml' })).rejects.toBeInstanceOf(
          RunConflictError,
        );
        expect((await store.getRun(run.id))?.asset).toBe('hello/site.yml');
      });
    });

    describe('idempotency keys', () => {
      it('returns the first run for the same key and fingerprint, creating nothing', async () => {
        const first = aRun();
        const retry = aRun();

        await store.createRun(first, { idempotencyKey: 'k-1', fingerprint: 'f-1' });
        const result = await store.createRun(retry, { idempotencyKey: 'k-1', fingerprint: 'f-1' });

        expect(result).toEqual({ run: first, created: false });
        expect(await store.getRun(retry.id)).toBeUndefined();
      });

      it('returns the current state of the first run, not its state at creation', async () => {
        const first = aRun();
        await store.createRun(first, { idempotencyKey: 'k-2', fingerprint: 'f' });
        const claimed = await store.updateRun(transition(first, 'dispatching', at(1)), first.version);

        const result = await store.createRun(aRun(), { idempotencyKey: 'k-2', fingerprint: 'f' });

        expect(result.created).toBe(false);
        expect(result.run).toEqual(claimed);
      });

      it('refuses the same key with a different fingerprint and creates nothing', async () => {
        const first = aRun();
        const other = aRun();
        await store.createRun(first, { idempotencyKey: 'k-3', fingerprint: 'f-1' });

        await expect(
          store.createRun(other, { idempotencyKey: 'k-3', fingerprint: 'f-2' }),
        ).rejects.toBeInstanceOf(IdempotencyMismatchError);
        expect(await store.getRun(other.id)).toBeUndefined();
      });

      it('keeps different keys apart', async () => {
        const a = aRun();
        const b = aRun();

        const ra = await store.createRun(a, { idempotencyKey: 'k-a', fingerprint: 'same' });
        const rb = await store.createRun(b, { idempotencyKey: 'k-b', fingerprint: 'same' });

        expect([ra.created, rb.created]).toEqual([true, true]);
        expect(await store.getRun(b.id)).toEqual(b);
      });

      it('answers concurrent retries of one key with a single run', async () => {
        const attempts = Array.from({ length: 5 }, () => aRun());

        const results = await Promise.all(
          attempts.map((run) => store.createRun(run, { idempotencyKey: 'k-race', fingerprint: 'f' })),
        );

        expect(results.filter((r) => r.created)).toHaveLength(1);
        expect(new Set(results.map((r) => r.run.id)).size).toBe(1);
      });
    });

    describe('createRuns', () => {
      it('inserts every run of a batch', async () => {
        const runs = [aRun({ batchId: 'b-all' }), aRun({ batchId: 'b-all' }), aRun({ batchId: 'b-all' })];

        await store.createRuns(runs);

        for (const run of runs) expect(await store.getRun(run.id)).toEqual(run);
      });

      it('inserts nothing when one run of the batch cannot be written', async () => {
        const existing = aRun();
        await store.createRun(existing);
        const fresh = [aRun({ batchId: 'b-none' }), aRun({ batchId: 'b-none' })];

        await expect(store.createRuns([...fresh, { ...existing, batchId: 'b-none' }])).rejects.toBeInstanceOf(
          RunConflictError,
        );

        for (const run of fresh) expect(await store.getRun(run.id)).toBeUndefined();
        expect(await store.getRun(existing.id)).toEqual(existing);
      });
    });

    describe('updateRun', () => {
      it('writes when the stored version is the expected one', async () => {
        const run = aRun();
        await store.createRun(run);
        const next = transition(run, 'dispatching', at(1), { patch: { owner: 'dispatcher-1', attempt: 1 } });

        const written = await store.updateRun(next, run.version);

        expect(written).toEqual(next);
        expect(await store.getRun(run.id)).toEqual(next);
      });

      it('loses to a concurrent writer with RunConflictError naming the run and versions', async () => {
        const run = aRun();
        await store.createRun(run);
        const winner = transition(run, 'dispatching', at(1), { patch: { owner: 'a' } });
        const loser = transition(run, 'cancelled', at(2), { reason: 'user asked' });
        await store.updateRun(winner, run.version);

        const attempt = store.updateRun(loser, run.version);

        await expect(attempt).rejects.toBeInstanceOf(RunConflictError);
        await expect(attempt).rejects.toThrow(run.id);
        await expect(attempt).rejects.toThrow(new RegExp(`version ${run.version}\\b`));
        await expect(attempt).rejects.toThrow(new RegExp(`version ${winner.version}\\b`));
        expect(await store.getRun(run.id)).toEqual(winner);
      });

      it('says in the RunConflictError what it found, so a retry needs no read, and keeps it out of logs', async () => {
        const run = aRun();
        await store.createRun(run);
        const winner = transition(run, 'dispatching', at(1), { patch: { owner: 'a' } });
        await store.updateRun(winner, run.version);

        const lost = await store
          .updateRun(transition(run, 'cancelled', at(2), { reason: 'user asked' }), run.version)
          .catch((error: unknown) => error);

        expect(lost).toBeInstanceOf(RunConflictError);
        expect((lost as RunConflictError).current).toEqual(winner);
        expect(Object.keys(lost as object)).not.toContain('current');
        expect(JSON.stringify(lost)).not.toContain(run.id);
      });

      it('never overwrites a terminal run, even with its current version', async () => {
        const run = aRun();
        await store.createRun(run);
        const claimed = await store.updateRun(transition(run, 'dispatching', at(1)), run.version);
        const launched = await store.updateRun(transition(claimed, 'launched', at(2)), claimed.version);
        const done = await store.updateRun(
          transition(launched, 'succeeded', at(3), { patch: { exitCode: 0 } }),
          launched.version,
        );
        const forged: Run = { ...done, state: 'running', version: done.version + 1 };

        const refused = await store.updateRun(forged, done.version).catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(RunConflictError);
        expect((refused as RunConflictError).current).toEqual(done);
        expect(await store.getRun(run.id)).toEqual(done);
      });

      it('answers NotFoundError for a run that does not exist', async () => {
        const ghost = aRun();

        await expect(
          store.updateRun(transition(ghost, 'dispatching', at(1)), ghost.version),
        ).rejects.toBeInstanceOf(NotFoundError);
        expect(await store.getRun(ghost.id)).toBeUndefined();
      });
    });

    describe('listRuns', () => {
      let all: Run[];

      beforeEach(async () => {
        all = [];
        for (let i = 0; i < 23; i += 1) {
          const run = aRun(i % 3 === 0 ? {} : { batchId: i % 3 === 1 ? 'batch-a' : 'batch-b' });
          await store.createRun(run);
          all.push(i % 4 === 0 ? await store.updateRun(transition(run, 'refused', at(1)), run.version) : run);
        }
      });

      const newestFirst = (runs: readonly Run[]): string[] =>
        runs
          .map((r) => r.id)
          .sort()
          .reverse();

      it('walks every page newest first with no duplicates and no misses', async () => {
        const { ids, pages } = await walk(store, {}, 5);

        expect(ids).toEqual(newestFirst(all));
        expect(pages).toBe(5);
      });

      it('returns no cursor on a page that ends the list exactly', async () => {
        const first = await store.listRuns({ limit: 23 });

        expect(first.runs).toHaveLength(23);
        expect(first.nextCursor).toBeUndefined();
      });

      it('filters by batch id across pages', async () => {
        const { ids } = await walk(store, { batchId: 'batch-a' }, 3);

        expect(ids).toEqual(newestFirst(all.filter((r) => r.batchId === 'batch-a')));
        expect(ids.length).toBeGreaterThan(3);
      });

      it('filters by state across pages', async () => {
        const { ids } = await walk(store, { state: 'refused' }, 2);

        expect(ids).toEqual(newestFirst(all.filter((r) => r.state === 'refused')));
        expect(ids.length).toBeGreaterThan(2);
      });

      it('filters by batch id and state together', async () => {
        const { ids } = await walk(store, { batchId: 'batch-b', state: 'queued' }, 2);

        expect(ids).toEqual(newestFirst(all.filter((r) => r.batchId === 'batch-b' && r.state === 'queued')));
        expect(ids.length).toBeGreaterThan(0);
      });

      it('answers an empty page for a batch with no runs', async () => {
        expect(await store.listRuns({ batchId: 'nothing-here', limit: 10 })).toEqual({ runs: [] });
      });

      it('refuses a cursor it did not make with ValidationError', async () => {
        for (const cursor of ['not a cursor!', '%%%', '']) {
          await expect(store.listRuns({ limit: 5, cursor })).rejects.toBeInstanceOf(ValidationError);
        }
      });
    });

    describe('listActiveRuns', () => {
      it('lists non-terminal runs oldest first, up to the limit', async () => {
        const queued = aRun();
        const finished = aRun();
        const dispatching = aRun();
        const later = aRun();
        await store.createRuns([queued, finished, dispatching, later]);
        await store.updateRun(transition(finished, 'failed', at(1), { reason: 'boom' }), finished.version);
        const claimed = await store.updateRun(
          transition(dispatching, 'dispatching', at(1)),
          dispatching.version,
        );

        expect(await store.listActiveRuns(10)).toEqual([queued, claimed, later]);
        expect(await store.listActiveRuns(2)).toEqual([queued, claimed]);
      });
    });

    describe('managed-account holds', () => {
      it('gives an account to one run at a time and to the next once it is released', async () => {
        expect(await store.holdAccount('web-01/root', 'run-a')).toBe('run-a');
        expect(await store.holdAccount('web-01/root', 'run-b')).toBe('run-a');
        // Another account is independent.
        expect(await store.holdAccount('web-02/root', 'run-b')).toBe('run-b');

        await store.releaseAccount('web-01/root', 'run-a');

        expect(await store.holdAccount('web-01/root', 'run-b')).toBe('run-b');
      });

      it('answers the holder itself on a repeated hold, and ignores a release by another run', async () => {
        await store.holdAccount('pg-01/dbadmin', 'run-a');

        expect(await store.holdAccount('pg-01/dbadmin', 'run-a')).toBe('run-a');
        await store.releaseAccount('pg-01/dbadmin', 'run-b');
        expect(await store.holdAccount('pg-01/dbadmin', 'run-b')).toBe('run-a');
      });

      it('takes an account over only from the holder named', async () => {
        await store.holdAccount('pg-01/dbadmin', 'run-a');

        expect(await store.holdAccount('pg-01/dbadmin', 'run-c', { replacing: 'run-b' })).toBe('run-a');
        expect(await store.holdAccount('pg-01/dbadmin', 'run-c', { replacing: 'run-a' })).toBe('run-c');
        expect(await store.holdAccount('pg-01/dbadmin', 'run-a')).toBe('run-c');
      });

      it('lets exactly one of many concurrent runs take a free account', async () => {
        const runs = Array.from({ length: 8 }, (_, i) => `run-${i}`);

        const answers = await Promise.all(runs.map((id) => store.holdAccount('shared/admin', id)));

        const holders = new Set(answers);
        expect(holders.size).toBe(1);
        expect(runs).toContain([...holders][0]);
      });
    });
  });
}
