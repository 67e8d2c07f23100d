import { closeSync, fdatasync, openSync } from 'node:fs';
import { commitWithBatch, type SqliteDatabase, withoutFsync } from './database.ts';

/**
 * A durable write with a group commit off the event loop: `write` commits
 * at once, in its own IMMEDIATE transaction, without an fsync inside SQLite
 * (`synchronous = NORMAL`), and the promise resolves once an `fdatasync` of
 * the WAL file, run on libuv's thread pool and begun after that commit, has
 * returned. The WAL is written in order, so that fsync makes this commit and
 * every earlier one durable: commits made while one fsync is under way share
 * the next (a group commit), and the event loop serves other requests
 * meanwhile instead of blocking in SQLite's own fsync.
 *
 * The fsync begins once the turn of the event loop that committed has run
 * its course (on `setImmediate`), not at the commit: work the commit set off
 * in this process commits in that turn too and shares the fsync. In local
 * mode that is the submit's chain — the dispatcher, woken at once by the
 * run's message, and the relay, woken at once by the dispatcher's
 * (SqliteWorkQueue `wakeAtOnce`), run on promises alone up to the relay's
 * durable claim — so one fsync, not two in a row, stands between a POST and
 * its task's start. The 202 waits for that same fsync.
 *
 * The durable point is the promise: nothing that tells the world about the
 * write (a 202, a task's start, an answered cancel) may happen before it
 * resolves — the same rule as SQLite's own `synchronous = FULL` commit. What
 * differs is that this process's other readers can see the write up to one
 * fsync earlier; `whenDurable` lets the API's readers wait for it
 * (`withDurableReads`, durable-reads.ts). A killed process loses nothing
 * either way (committed pages are in the OS cache).
 *
 * When the turn's unsynced writes are in an open batch (database.ts
 * `commitWithoutFsync`), `write` joins it and its commit is the batch's: one
 * commit, one fsync for them all. Inside a caller's open transaction the
 * caller's commit decides. A
 * connection without a WAL file (`:memory:`, another journal mode) commits
 * with SQLite's own fsync, as before.
 *
 * Hand-written: better-sqlite3 is synchronous and has no asynchronous
 * commit, and the group forms on this process's event loop.
 *
 * The COMMIT carries a comment so a statement trace (openDatabase's `trace`)
 * can tell these commits from the ones that need no fsync.
 *
 * @example
 * const run = await durableWrite(db, () => insertRun.run(id, body));
 */
export function durableWrite<T>(
  db: SqliteDatabase,
  write: () => T,
  /** Called with the value once `write` is committed, before its fsync (e.g. to prepare what follows). */
  committed?: (value: T) => void,
): Promise<T> {
  try {
    const wal = walOf(db);
    // The turn's unsynced writes (database.ts commitWithoutFsync) commit with this one, and its fsync covers them.
    const batched = wal === undefined ? undefined : commitWithBatch(db, write, wal.commit);
    if (db.inTransaction && batched === undefined) return Promise.resolve(write());
    if (wal === undefined) {
      const value = db.transaction(write).immediate();
      committed?.(value);
      return Promise.resolve(value);
    }
    const value = batched === undefined ? withoutFsync(db, () => commitOnce(wal, db, write)) : batched.value;
    wal.committed += 1;
    const synced = syncedUpTo(wal, wal.committed).then(() => value);
    committed?.(value);
    return synced;
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Resolves once every durable write committed so far on `db` is durable;
 * undefined when none is waiting for its fsync (no need to wait at all).
 */
export function whenDurable(db: SqliteDatabase): Promise<void> | undefined {
  const wal = wals.get(db);
  if (wal === undefined || wal.synced >= wal.committed) return undefined;
  return syncedUpTo(wal, wal.committed);
}

/** The COMMIT of a durable write (the trace's marker: test/support/commit-counter.ts). */
export const DURABLE_COMMIT = 'COMMIT /* durable: the WAL is fsynced next (group-commit.ts) */';

interface Waiter {
  readonly upTo: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

interface Wal {
  readonly fd: number;
  readonly begin: { run(): unknown };
  readonly commit: { run(): unknown };
  readonly rollback: { run(): unknown };
  /** Durable writes committed (a sequence number). */
  committed: number;
  /** Durable writes known to be on disk: every one up to this number. */
  synced: number;
  /** The newest commit an fsync under way (or done) began after. */
  coveredBySyncs: number;
  inFlight: number;
  /** An fsync is due at the end of this turn (scheduleSync). */
  scheduled: boolean;
  waiters: Waiter[];
}

/** The connection's WAL state, or undefined when it has no WAL file to fsync. */
const wals = new WeakMap<SqliteDatabase, Wal>();
const noWal = new WeakSet<SqliteDatabase>();
const closeFd = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
});

function walOf(db: SqliteDatabase): Wal | undefined {
  const known = wals.get(db);
  if (known !== undefined || noWal.has(db)) return known;
  let fd: number | undefined;
  if (!db.memory && String(db.pragma('journal_mode', { simple: true })).toLowerCase() === 'wal') {
    try {
      // Linux fsyncs through a read-only descriptor; the WAL stays the same file while this connection is open.
      fd = openSync(`${db.name}-wal`, 'r');
    } catch {
      fd = undefined;
    }
  }
  if (fd === undefined) {
    noWal.add(db);
    return undefined;
  }
  const wal: Wal = {
    fd,
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare(DURABLE_COMMIT),
    rollback: db.prepare('ROLLBACK'),
    committed: 0,
    synced: 0,
    coveredBySyncs: 0,
    inFlight: 0,
    scheduled: false,
    waiters: [],
  };
  wals.set(db, wal);
  closeFd.register(db, fd);
  return wal;
}

function commitOnce<T>(wal: Wal, db: SqliteDatabase, write: () => T): T {
  wal.begin.run();
  try {
    const value = write();
    wal.commit.run();
    return value;
  } catch (error) {
    if (db.inTransaction) wal.rollback.run();
    throw error;
  }
}

function syncedUpTo(wal: Wal, upTo: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    wal.waiters.push({ upTo, resolve, reject });
    scheduleSync(wal);
  });
}

/** startSync at the end of this turn, once, whatever the number of commits made in it. */
function scheduleSync(wal: Wal): void {
  if (wal.scheduled) return;
  wal.scheduled = true;
  setImmediate(() => {
    wal.scheduled = false;
    startSync(wal);
  });
}

/**
 * At most two fsyncs at a time. A commit that an fsync under way does not
 * cover (it began before the commit) starts the second at the end of its
 * turn rather than waiting for the first to end, and the commits made while
 * both run share the next one.
 */
const MAX_IN_FLIGHT = 2;

function startSync(wal: Wal): void {
  const uncovered = wal.waiters.some((w) => w.upTo > wal.coveredBySyncs);
  if (wal.inFlight >= MAX_IN_FLIGHT || !uncovered) return;
  wal.inFlight += 1;
  const covers = wal.committed;
  wal.coveredBySyncs = covers;
  fdatasync(wal.fd, (error) => {
    wal.inFlight -= 1;
    const done = wal.waiters.filter((w) => w.upTo <= covers);
    wal.waiters = wal.waiters.filter((w) => w.upTo > covers);
    if (error === null) {
      wal.synced = Math.max(wal.synced, covers);
      for (const w of done) w.resolve();
    } else {
      const failed = new Error(
        'The write was committed but could not be made durable: fdatasync of the SQLite WAL failed',
        { cause: error },
      );
      for (const w of done) w.reject(failed);
    }
    // Commits this fsync does not cover; the writers just answered may add to them in this turn.
    if (wal.waiters.length > 0) scheduleSync(wal);
  });
}
