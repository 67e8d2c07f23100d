import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type SqliteDatabase } from '../../shared/adapters/sqlite/database.ts';
import { withDurableReads } from '../../shared/adapters/sqlite/durable-reads.ts';
import { durableWrite, whenDurable } from '../../shared/adapters/sqlite/group-commit.ts';
import { SqliteRunStore } from '../../shared/adapters/sqlite/run-store.ts';
import { newRun } from '../../shared/domain/run.ts';
import { commitCounter } from '../support/commit-counter.ts';

/*
 * Real fsyncs of a real WAL file: node:fs's fdatasync is wrapped (and still
 * called) so the test sees when each one begins and returns.
 */
const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');
const realFdatasync = fs.fdatasync;
const syncs: { begunAfter: number; doneAt?: number }[] = [];
let commits = 0;

beforeAll(() => {
  fs.fdatasync = ((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    const sync: { begunAfter: number; doneAt?: number } = { begunAfter: commits };
    syncs.push(sync);
    realFdatasync(fd, (error) => {
      sync.doneAt = commits;
      callback(error);
    });
  }) as typeof fs.fdatasync;
  syncBuiltinESMExports();
});
afterAll(() => {
  fs.fdatasync = realFdatasync;
  syncBuiltinESMExports();
});

describe('durableWrite (a group commit off the event loop)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rw-group-commit-'));
  let db: SqliteDatabase;
  let n = 0;
  const open = (trace?: (sql: string) => void) => {
    n += 1;
    db = openDatabase(join(dir, `g-${n}.db`), trace === undefined ? {} : { trace });
    db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL UNIQUE)');
    return db;
  };
  const insert = (body: string) => () => {
    db.prepare('INSERT INTO rows (body) VALUES (?)').run(body);
    commits += 1;
    return body;
  };
  afterEach(() => db?.close());
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('commits at once and resolves only after an fsync begun after the commit', async () => {
    open();
    const before = syncs.length;

    const pending = durableWrite(db, insert('a'));
    const seenByAnother = new Database(db.name, { readonly: true });
    const visible = seenByAnother.prepare('SELECT body FROM rows').pluck().all();
    seenByAnother.close();
    await pending;

    expect(visible).toEqual(['a']);
    const mine = syncs.slice(before);
    expect(mine.length).toBe(1);
    expect(mine[0]?.begunAfter).toBe(commits);
  });

  it('lets concurrent writes share fsyncs, each resolving after one that covers it', async () => {
    open();
    const before = syncs.length;
    const resolvedAt: number[] = [];
    const writes = Array.from({ length: 20 }, (_, i) => {
      const mine = durableWrite(db, insert(`w${i}`));
      const committedAs = commits;
      return mine.then(() => {
        // The newest fsync that has returned when this write resolves must have begun after its commit.
        const covering = syncs.slice(before).filter((s) => s.doneAt !== undefined);
        resolvedAt.push(Math.max(...covering.map((s) => s.begunAfter)) - committedAs);
      });
    });
    await Promise.all(writes);

    expect(syncs.length - before).toBeLessThan(20);
    expect(resolvedAt.every((d) => d >= 0)).toBe(true);
  });

  it('begins the fsync once the turn is over, so writes its promise callbacks make share it', async () => {
    open();
    const before = syncs.length;

    // A commit, then two more set off by it through promises alone (local mode's submit → dispatcher → relay).
    const first = durableWrite(db, insert('turn-1'));
    const hops = Promise.resolve().then(() => Promise.resolve());
    const second = hops.then(() => durableWrite(db, insert('turn-2')));
    const third = hops.then(() => Promise.resolve()).then(() => durableWrite(db, insert('turn-3')));
    await Promise.all([first, second, third]);
    const inOneTurn = syncs.slice(before);
    // The next turn's write needs an fsync of its own.
    await new Promise((resolve) => setImmediate(resolve));
    await durableWrite(db, insert('next-turn'));

    expect(inOneTurn.length).toBe(1);
    expect(inOneTurn[0]?.begunAfter).toBe(commits - 1);
    expect(syncs.length - before).toBe(2);
  });

  it('rolls back a write that throws, rejects it alone, and commits the next', async () => {
    open();
    await durableWrite(db, insert('dup'));

    await expect(durableWrite(db, insert('dup'))).rejects.toThrow(/UNIQUE/);
    await durableWrite(db, insert('after'));

    expect(db.prepare('SELECT body FROM rows ORDER BY id').pluck().all()).toEqual(['dup', 'after']);
    expect(db.inTransaction).toBe(false);
  });

  it('marks its commits durable in the statement trace', async () => {
    const counter = commitCounter();
    open(counter.trace);
    const start = counter.counts();

    await Promise.all([durableWrite(db, insert('x')), durableWrite(db, insert('y'))]);

    expect(counter.counts()).toEqual({ durable: start.durable + 2, unsynced: start.unsynced });
  });

  it('has readers wait for the fsync of what is committed, and not when nothing is pending', async () => {
    open();
    expect(whenDurable(db)).toBeUndefined();

    const write = durableWrite(db, insert('r'));
    let writeDone = false;
    void write.then(() => {
      writeDone = true;
    });
    const waited = whenDurable(db);
    await waited;

    expect(waited).toBeInstanceOf(Promise);
    await write;
    expect(writeDone).toBe(true);
    expect(whenDurable(db)).toBeUndefined();
  });

  it('commits with SQLite’s own fsync on a connection without a WAL file', async () => {
    const counter = commitCounter();
    db = openDatabase(':memory:', { trace: counter.trace });
    db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL UNIQUE)');
    const before = syncs.length;

    await durableWrite(db, insert('m'));

    expect(syncs.length).toBe(before);
    expect(counter.durableCommits().at(-1)).toEqual(['INSERT INTO rows']);
  });

  it('answers a client read of a run only once its submit is durable; the store itself at once', async () => {
    open();
    const store = new SqliteRunStore({ db });
    const clientView = withDurableReads(store, db);
    const run = newRun(
      { id: 'run-1', kind: 'vm', targetId: 't', asset: 'a.yml', requestedBy: 'p', timeoutSeconds: 60 },
      '2026-12-01T00:00:00.000Z',
    );
    const before = syncs.length;

    const created = store.createRun(run);
    const direct = await store.getRun('run-1');
    const syncsWhenDirectAnswered = syncs.slice(before).filter((s) => s.doneAt !== undefined).length;
    const seen = await clientView.getRun('run-1');
    const syncsWhenClientAnswered = syncs.slice(before).filter((s) => s.doneAt !== undefined).length;
    await created;

    expect(direct?.id).toBe('run-1');
    expect(syncsWhenDirectAnswered).toBe(0);
    expect(seen?.id).toBe('run-1');
    expect(syncsWhenClientAnswered).toBeGreaterThan(0);
  });
});
