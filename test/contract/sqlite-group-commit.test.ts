import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  closeDatabase,
  commitPendingWrites,
  commitWithFsync,
  commitWithoutFsync,
  ONE_STATEMENT,
  openDatabase,
  type SqliteDatabase,
} from '../../shared/adapters/sqlite/database.ts';
import { withDurableReads } from '../../shared/adapters/sqlite/durable-reads.ts';
import { durableWrite, whenDurable } from '../../shared/adapters/sqlite/group-commit.ts';
import { SqliteRunStore } from '../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../shared/adapters/sqlite/target-store.ts';
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

  it('commits once the turn is over and resolves only after an fsync begun after the commit', async () => {
    open();
    const before = syncs.length;
    const seenByAnother = () => {
      const another = new Database(db.name, { readonly: true });
      const rows = another.prepare('SELECT body FROM rows').pluck().all();
      another.close();
      return rows;
    };

    const pending = durableWrite(db, insert('a'));
    const inTurn = seenByAnother();
    await new Promise((resolve) => setImmediate(resolve));
    const afterTurn = seenByAnother();
    await pending;

    expect(inTurn).toEqual([]);
    expect(afterTurn).toEqual(['a']);
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

  it('tells `committed` of the value once its batch is committed, before its fsync begins', async () => {
    open();
    const before = syncs.length;
    let heard: { value: string; syncs: number; visible: unknown[] } | undefined;

    const pending = durableWrite(db, insert('c'), (value) => {
      const another = new Database(db.name, { readonly: true });
      heard = {
        value,
        syncs: syncs.length - before,
        visible: another.prepare('SELECT body FROM rows').pluck().all(),
      };
      another.close();
    });
    const heardInTurn = heard;
    await pending;

    expect(heardInTurn).toBeUndefined();
    expect(heard).toEqual({ value: 'c', syncs: 0, visible: ['c'] });
    await expect(durableWrite(db, insert('c'), () => expect.unreachable())).rejects.toThrow(/UNIQUE/);
  });

  it('rolls back a write that throws, rejects it alone, and commits the next', async () => {
    open();
    await durableWrite(db, insert('dup'));

    await expect(durableWrite(db, insert('dup'))).rejects.toThrow(/UNIQUE/);
    await durableWrite(db, insert('after'));

    expect(db.prepare('SELECT body FROM rows ORDER BY id').pluck().all()).toEqual(['dup', 'after']);
    expect(db.inTransaction).toBe(false);
  });

  it('commits the durable writes of one turn together, marked durable in the statement trace', async () => {
    const counter = commitCounter();
    open(counter.trace);
    const start = counter.counts();

    await Promise.all([durableWrite(db, insert('x')), durableWrite(db, insert('y'))]);

    expect(counter.counts()).toEqual({ durable: start.durable + 1, unsynced: start.unsynced });
    expect(counter.durableCommits().at(-1)).toEqual(['INSERT INTO rows', 'INSERT INTO rows']);
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

describe('commitWithoutFsync (one write batch per turn)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rw-write-batch-'));
  let db: SqliteDatabase;
  let n = 0;
  const open = (trace?: (sql: string) => void) => {
    n += 1;
    db = openDatabase(join(dir, `b-${n}.db`), trace === undefined ? {} : { trace });
    db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL UNIQUE)');
    return db;
  };
  const insert = (body: string) => () => db.prepare('INSERT INTO rows (body) VALUES (?)').run(body).changes;
  const rows = (on: { prepare: SqliteDatabase['prepare'] } = db) =>
    on.prepare('SELECT body FROM rows ORDER BY id').pluck().all();
  const fromAnother = () => {
    const other = new Database(db.name, { readonly: true });
    try {
      return rows(other);
    } finally {
      other.close();
    }
  };
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  afterEach(() => {
    if (db?.open) closeDatabase(db);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("commits the turn's writes once, without an fsync, when the turn is over", async () => {
    const counter = commitCounter();
    open(counter.trace);
    const start = counter.counts();

    commitWithoutFsync(db, insert('a'));
    await Promise.resolve().then(() => commitWithoutFsync(db, insert('b')));
    const inTurn = { mine: rows(), another: fromAnother(), counts: counter.counts() };
    await turn();

    expect(inTurn.mine).toEqual(['a', 'b']); // this connection reads its batch at once
    expect(inTurn.another).toEqual([]);
    expect(inTurn.counts).toEqual(start);
    expect(counter.counts()).toEqual({ durable: start.durable, unsynced: start.unsynced + 1 });
    expect(fromAnother()).toEqual(['a', 'b']);
    expect(db.inTransaction).toBe(false);
    expect(db.pragma('synchronous', { simple: true })).toBe(1); // left at NORMAL for the next batch
  });

  it('reads the level once and sets it only when it has to change: once for a run of batches, FULL for a write that needs it', async () => {
    const statements: string[] = [];
    const counter = commitCounter();
    open((sql) => {
      statements.push(sql);
      counter.trace(sql);
    });
    const opened = statements.length; // openDatabase set FULL
    const levelSets = () => statements.slice(opened).filter((sql) => /^PRAGMA synchronous = /.test(sql));
    for (const body of ['first', 'second', 'third']) {
      commitWithoutFsync(db, insert(body));
      await turn();
    }
    const afterBatches = levelSets();
    const before = counter.counts();

    commitWithFsync(db, insert('needs-fsync'));
    const afterFsynced = counter.counts();
    commitWithoutFsync(db, insert('fourth'));
    await turn();

    expect(afterBatches).toEqual(['PRAGMA synchronous = NORMAL']);
    expect(afterFsynced).toEqual({ durable: before.durable + 1, unsynced: before.unsynced });
    expect(counter.counts()).toEqual({ durable: before.durable + 1, unsynced: before.unsynced + 1 });
    expect(levelSets()).toEqual([
      'PRAGMA synchronous = NORMAL',
      'PRAGMA synchronous = FULL',
      'PRAGMA synchronous = NORMAL',
    ]);
    expect(statements.filter((sql) => sql === 'PRAGMA synchronous')).toHaveLength(1);
    expect(fromAnother()).toEqual(['first', 'second', 'third', 'needs-fsync', 'fourth']);
  });

  it('runs a one-statement write without a savepoint; SQLite undoes it alone when it fails', async () => {
    const statements: string[] = [];
    open((sql) => statements.push(sql));
    commitWithoutFsync(db, insert('kept'));
    const from = statements.length;

    commitWithoutFsync(db, insert('one'), ONE_STATEMENT);
    expect(() => commitWithoutFsync(db, insert('one'), ONE_STATEMENT)).toThrow(/UNIQUE/);
    // A failing multi-row statement: its first row is undone with it.
    const both = () => db.prepare("INSERT INTO rows (body) VALUES ('two'), ('kept')").run();
    expect(() => commitWithoutFsync(db, both, ONE_STATEMENT)).toThrow(/UNIQUE/);
    await expect(durableWrite(db, insert('kept'), undefined, ONE_STATEMENT)).rejects.toThrow(/UNIQUE/);
    const durable = durableWrite(db, insert('three'), undefined, ONE_STATEMENT);
    const mine = statements.slice(from);
    await durable;

    expect(mine.filter((sql) => sql.includes('SAVEPOINT'))).toEqual([]);
    expect(fromAnother()).toEqual(['kept', 'one', 'three']);
  });

  it('rolls back a write that throws alone and commits the rest of the batch', async () => {
    open();
    commitWithoutFsync(db, insert('dup'));

    expect(() => commitWithoutFsync(db, insert('dup'))).toThrow(/UNIQUE/);
    commitWithoutFsync(db, insert('after'));
    await turn();

    expect(fromAnother()).toEqual(['dup', 'after']);
  });

  it('commits durable and unsynced writes of a turn in one commit, marked durable, under one fsync; a durable write that throws leaves it', async () => {
    const counter = commitCounter();
    open(counter.trace);
    const start = counter.counts();
    const before = syncs.length;

    commitWithoutFsync(db, insert('lease'));
    commitWithoutFsync(db, insert('step'));
    await expect(durableWrite(db, insert('step'))).rejects.toThrow(/UNIQUE/);
    const durable = durableWrite(db, insert('claim'));
    const seenInTurn = fromAnother();
    await durable;

    expect(seenInTurn).toEqual([]);
    expect(fromAnother()).toEqual(['lease', 'step', 'claim']);
    expect(counter.counts()).toEqual({ durable: start.durable + 1, unsynced: start.unsynced });
    expect(counter.durableCommits().at(-1)).toEqual([
      'INSERT INTO rows',
      'INSERT INTO rows',
      'INSERT INTO rows',
    ]);
    expect(syncs.length - before).toBe(1);
    expect(db.inTransaction).toBe(false);
  });

  it('rolls the whole batch back and rejects each durable write in it when its commit fails', async () => {
    open();
    db.pragma('foreign_keys = ON');
    db.exec(`CREATE TABLE parents (id INTEGER PRIMARY KEY);
      CREATE TABLE children (parent INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)`);
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on('warning', onWarning);

    commitWithoutFsync(db, insert('unsynced'));
    const durable = durableWrite(db, insert('durable'));
    // Refused only at COMMIT (a deferred foreign key): the batch's commit fails, not the write.
    const orphan = durableWrite(db, () => db.prepare('INSERT INTO children (parent) VALUES (42)').run());

    await expect(durable).rejects.toThrow(/FOREIGN KEY/);
    await expect(orphan).rejects.toThrow(/FOREIGN KEY/);
    expect(rows()).toEqual([]);
    expect(fromAnother()).toEqual([]);
    expect(db.inTransaction).toBe(false);
    await durableWrite(db, insert('next-turn'));
    process.off('warning', onWarning);

    expect(fromAnother()).toEqual(['next-turn']);
    expect(warnings.join()).toMatch(/could not be committed/);
  });

  it('is committed before a write that needs SQLite’s own fsync, and on close', async () => {
    const counter = commitCounter();
    open(counter.trace);
    db.exec('CREATE TABLE IF NOT EXISTS targets (id TEXT PRIMARY KEY, body TEXT NOT NULL) STRICT');
    const targets = new SqliteTargetStore({ db });
    const start = counter.counts();

    commitWithoutFsync(db, insert('before-target'));
    await targets.putTarget({
      kind: 'vm',
      id: 'vm-1',
      cloud: 'local',
      name: 'vm-1',
      address: '127.0.0.1',
      connection: 'local',
    } as never);
    const afterPut = counter.counts();
    commitWithoutFsync(db, insert('before-flush'));
    commitPendingWrites(db);
    commitWithoutFsync(db, insert('before-close'));
    const name = db.name;
    closeDatabase(db);
    const reopened = new Database(name, { readonly: true });
    const kept = rows(reopened);
    reopened.close();

    // The batch's own commit (unsynced), then the target's with synchronous = FULL.
    expect(afterPut).toEqual({ durable: start.durable + 1, unsynced: start.unsynced + 1 });
    expect(kept).toEqual(['before-target', 'before-flush', 'before-close']);
  });

  it('commits each write at once on a :memory: connection', () => {
    db = openDatabase(':memory:');
    db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL UNIQUE)');

    commitWithoutFsync(db, insert('m'));

    expect(db.inTransaction).toBe(false);
    expect(rows()).toEqual(['m']);
  });
});
