import { closeSync, fdatasync, openSync } from 'node:fs';
import {
  batchHoldsDurableWrites,
  batchIsOpen,
  commitWithFsync,
  type SqliteDatabase,
  type WriteOptions,
  writeInBatch,
} from './database.ts';

/**
 * A durable write with a group commit off the event loop: `write` runs in
 * the connection's write batch (database.ts `commitWithoutFsync`: the writes
 * of one turn of the event loop in one transaction, each in a savepoint
 * unless it is one statement: `options`),
 * which commits once the turn is over, without an fsync inside SQLite
 * (`synchronous = NORMAL`); the promise resolves once an `fdatasync` of the
 * WAL file, run on libuv's thread pool and begun after that commit, has
 * returned. The WAL is written in order, so that fsync makes this commit and
 * every earlier one durable: batches committed while one fsync is under way
 * share the next (a group commit), and the event loop serves other requests
 * meanwhile instead of blocking in SQLite's own fsync.
 *
 * Work the write sets off in this process within the turn joins the same
 * commit and shares its fsync. In local mode that is the submit's chain —
 * the dispatcher, woken at once by the run's message, and the relay, woken
 * at once by the dispatcher's (SqliteWorkQueue `wakeAtOnce`), run on
 * promises alone up to the relay's durable claim — so one commit and one
 * fsync stand between a POST and its task's start. The 202 waits for that
 * same fsync.
 *
 * The durable point is the promise: nothing that tells the world about the
 * write (a 202, a task's start, an answered cancel) may happen before it
 * resolves — the same rule as SQLite's own `synchronous = FULL` commit. What
 * differs is that this process's other readers can see the write up to one
 * fsync earlier; `whenDurable` lets the API's readers wait for it
 * (`withDurableReads`, durable-reads.ts). Should the batch's commit fail,
 * the batch is rolled back as a whole and every durable write in it rejected.
 *
 * Inside a caller's open transaction the caller's commit decides. A
 * connection without a WAL file (`:memory:`, another journal mode) commits
 * at once with SQLite's own fsync, as before.
 *
 * Hand-written: better-sqlite3 is synchronous and has no asynchronous
 * commit, and the group forms on this process's event loop.
 *
 * The batch's COMMIT carries a comment (DURABLE_COMMIT) so a statement trace
 * (openDatabase's `trace`) can tell these commits from the ones that need no fsync.
 *
 * @example
 * const run = await durableWrite(db, () => insertRun.run(id, body));
 */
export function durableWrite<T>(
  db: SqliteDatabase,
  write: () => T,
  /** Called with the value once `write` is committed, before its fsync (e.g. to prepare what follows). */
  committed?: (value: T) => void,
  options: WriteOptions = {},
): Promise<T> {
  try {
    if (db.inTransaction && !batchIsOpen(db)) return Promise.resolve(write());
    const wal = walOf(db);
    if (wal === undefined) {
      // No WAL of ours to fsync (`:memory:`, or a connection not in WAL mode): SQLite's own commit, at FULL.
      const value = commitWithFsync(db, write);
      committed?.(value);
      return Promise.resolve(value);
    }
    return new Promise<T>((resolve, reject) => {
      let value: T;
      const told = {
        committed(batch: object) {
          if (wal.lastBatch !== batch) {
            wal.lastBatch = batch;
            wal.committed += 1;
          }
          wal.waiters.push({ upTo: wal.committed, resolve: () => resolve(value), reject });
          startSyncSoon(wal);
          committed?.(value);
        },
        failed: (error: unknown) => reject(error),
      };
      value = writeInBatch(db, write, told, options);
    });
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Resolves once every durable write committed so far on `db`, or waiting in
 * its open write batch, is durable; undefined when none is waiting for its
 * fsync (no need to wait at all).
 */
export function whenDurable(db: SqliteDatabase): Promise<void> | undefined {
  const wal = wals.get(db);
  if (wal !== undefined && batchHoldsDurableWrites(db)) {
    return durableWrite(db, () => undefined); // after the batch's commit and its fsync
  }
  if (wal === undefined || wal.synced >= wal.committed) return undefined;
  return syncedUpTo(wal, wal.committed);
}

interface Waiter {
  readonly upTo: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

interface Wal {
  readonly fd: number;
  /** The write batch whose commit `committed` counts last (database.ts writeInBatch). */
  lastBatch: object | undefined;
  /** Commits holding durable writes (a sequence number: each batch's commit counts once). */
  committed: number;
  /** Durable writes known to be on disk: every one up to this number. */
  synced: number;
  /** The newest commit an fsync under way (or done) began after. */
  coveredBySyncs: number;
  inFlight: number;
  /** An fsync is due at the end of this turn (scheduleSync). */
  scheduled: boolean;
  /** An fsync is due once the batch commit under way has told its writes (startSyncSoon). */
  soon: boolean;
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
    lastBatch: undefined,
    committed: 0,
    synced: 0,
    coveredBySyncs: 0,
    inFlight: 0,
    scheduled: false,
    soon: false,
    waiters: [],
  };
  wals.set(db, wal);
  closeFd.register(db, fd);
  return wal;
}

function syncedUpTo(wal: Wal, upTo: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    wal.waiters.push({ upTo, resolve, reject });
    scheduleSync(wal);
  });
}

/**
 * startSync once when `defer` calls back, however many commits ask before
 * then; `pending` names the flag that says one is due.
 */
function startSyncAfter(wal: Wal, pending: 'scheduled' | 'soon', defer: (call: () => void) => unknown): void {
  if (wal[pending]) return;
  wal[pending] = true;
  defer(() => {
    wal[pending] = false;
    startSync(wal);
  });
}

/** startSync at the end of this turn, once, whatever the number of commits made in it. */
const scheduleSync = (wal: Wal): void => startSyncAfter(wal, 'scheduled', setImmediate);

/**
 * startSync once the batch commit that called it has told all its writes
 * (a microtask): the batch commits when its turn is over, so there is
 * nothing left to wait for.
 */
const startSyncSoon = (wal: Wal): void => startSyncAfter(wal, 'soon', queueMicrotask);

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
