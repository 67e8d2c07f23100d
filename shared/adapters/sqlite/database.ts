import { chmodSync, existsSync } from 'node:fs';
import Database from 'better-sqlite3';

/** One open connection; the adapters share it and never close it (the opener does). */
export type SqliteDatabase = Database.Database;

/**
 * Schema migrations, applied in order; `PRAGMA user_version` records how many
 * ran. Never edit a released entry: append a new one.
 */
const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE runs (
    id         TEXT PRIMARY KEY,
    state      TEXT NOT NULL,
    batch_id   TEXT,
    created_at TEXT NOT NULL,
    version    INTEGER NOT NULL,
    body       TEXT NOT NULL
  ) STRICT;
  CREATE INDEX runs_by_state ON runs (state, id);
  CREATE INDEX runs_by_batch ON runs (batch_id, id) WHERE batch_id IS NOT NULL;

  CREATE TABLE idempotency_keys (
    key         TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    expires_ms  INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_ms);

  CREATE TABLE targets (
    id   TEXT PRIMARY KEY,
    body TEXT NOT NULL
  ) STRICT;

  -- seq (the rowid) is the send order; several named queues share the table.
  CREATE TABLE messages (
    seq           INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    queue         TEXT NOT NULL,
    body          TEXT NOT NULL,
    sent_at       TEXT NOT NULL,
    visible_at_ms INTEGER NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    receipt       TEXT
  ) STRICT;
  CREATE INDEX messages_by_visibility ON messages (queue, visible_at_ms, seq);
  CREATE UNIQUE INDEX messages_by_receipt ON messages (receipt) WHERE receipt IS NOT NULL;

  CREATE TABLE log_lines (
    run_id TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    at     TEXT NOT NULL,
    stream TEXT NOT NULL,
    text   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
  ) STRICT, WITHOUT ROWID;
  `,
  `
  -- Which run holds a Password Safe managed account (runs on one account are serialised).
  CREATE TABLE account_holds (
    account  TEXT PRIMARY KEY,
    run_id   TEXT NOT NULL,
    since_ms INTEGER NOT NULL
  ) STRICT;
  `,
  `
  -- Messages without the two indexes no query needs: nothing looks a message up by its id (a random UUID),
  -- and a receipt handle starts with its message's seq, so a delete or a visibility change finds the row by
  -- its rowid (work-queue.ts). Each was one more page in the WAL for every send, receive and delete.
  CREATE TABLE messages_v3 (
    seq           INTEGER PRIMARY KEY,
    id            TEXT NOT NULL,
    queue         TEXT NOT NULL,
    body          TEXT NOT NULL,
    sent_at       TEXT NOT NULL,
    visible_at_ms INTEGER NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    receipt       TEXT
  ) STRICT;
  INSERT INTO messages_v3 (seq, id, queue, body, sent_at, visible_at_ms, receive_count, receipt)
    SELECT seq, id, queue, body, sent_at, visible_at_ms, receive_count, receipt FROM messages;
  DROP TABLE messages;
  ALTER TABLE messages_v3 RENAME TO messages;
  CREATE INDEX messages_by_visibility ON messages (queue, visible_at_ms, seq);
  `,
];

export interface OpenDatabaseOptions {
  /**
   * Called with every statement the connection executes, `BEGIN`/`COMMIT` and pragmas included (tests
   * count durable commits with it). Statements carry bound values: never log them.
   */
  readonly trace?: (sql: string) => void;
}

/**
 * Open (creating if needed) the local-mode database and bring its schema up
 * to date. One file holds runs, targets, idempotency keys, queue messages and
 * logs, so a run and its queue message can never disagree after a crash.
 *
 * Durability: WAL with `synchronous=FULL`. In WAL mode `NORMAL` already
 * survives a killed process (committed pages are in the OS cache), but a power
 * loss or kernel panic can roll back the last commits; `FULL` fsyncs the WAL
 * on every commit so a `202 Accepted` run survives those too. The run
 * store's durable writes (submit, relay claim, terminal states) instead
 * commit without SQLite's fsync and wait for an fdatasync of the WAL off the
 * event loop, shared by the commits made meanwhile (group-commit.ts): the
 * same guarantee at the moment they resolve, without blocking other requests.
 *
 * @example
 * const db = openDatabase(join(dataDir, 'remote-worker.db'));
 * const runs = new SqliteRunStore({ db });
 * process.on('exit', () => closeDatabase(db));
 */
export function openDatabase(path: string, options: OpenDatabaseOptions = {}): SqliteDatabase {
  const isNewFile = path !== ':memory:' && path !== '' && !existsSync(path);
  // `timeout` is better-sqlite3's busy handler: wait for another connection's write lock instead of failing.
  const db = new Database(path, {
    timeout: 5000,
    ...(options.trace === undefined ? {} : { verbose: (sql: unknown) => options.trace?.(String(sql)) }),
  });
  try {
    if (isNewFile) {
      // Runs carry extra vars and targets (no secret: plaintext passwords are per-run secrets), yet nothing
      // here is for other local users to read; SQLite gives -wal/-shm the same mode.
      chmodSync(path, 0o600);
    }
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    migrate(db);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

function migrate(db: SqliteDatabase): void {
  // IMMEDIATE takes the write lock before reading user_version, so two processes opening a new file cannot both migrate.
  db.transaction(() => {
    const current = db.pragma('user_version', { simple: true }) as number;
    if (current > MIGRATIONS.length) {
      throw new Error(
        `Database ${db.name} has schema version ${current}, newer than this build knows (${MIGRATIONS.length}): upgrade Remote Worker`,
      );
    }
    for (const [index, sql] of MIGRATIONS.entries()) {
      if (index < current) continue;
      db.exec(sql);
    }
    if (current < MIGRATIONS.length) db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

/**
 * Run `write` as part of a transaction committed without an fsync
 * (`synchronous = NORMAL`), for writes whose loss in a power cut is harmless
 * because it only undoes a lease or a step nothing outside the process has
 * acted on (durability.ts): a queue receive, a visibility change, an
 * acknowledgement, a log line, a local run's steps before the relay's claim.
 *
 * On a file database the writes of one turn of the event loop share one
 * transaction, the write batch (writeInBatch): the first opens it (BEGIN
 * IMMEDIATE), each runs in a savepoint of its own, so one that throws is
 * rolled back alone (a one-statement write needs none: `WriteOptions`),
 * and the batch commits once that turn is over
 * (`setImmediate`). Durable writes join it too (group-commit.ts
 * `durableWrite`), and wait for an fsync begun after its commit. A run's
 * submit, the dispatcher's steps and the relay's claim thus make one commit
 * instead of seven, and a burst's submits, receives, acknowledgements and log
 * lines of one turn one commit between them. This connection reads its batch
 * at once; another connection sees it once it commits, at the latest at the
 * end of the turn. A kill -9 may take the batch of the turn it lands in, as
 * a power cut may take commits not yet fsynced: nothing in it was
 * acknowledged (a durable write resolves after its fsync), and the loss of
 * the rest is harmless (durability.ts).
 *
 * Every other write on the connection must not join a batch unawares: a
 * write that needs SQLite's own fsync (`synchronous = FULL`) goes through
 * `commitWithFsync`, which commits the batch first. `:memory:` connections
 * commit each write at once.
 */
export function commitWithoutFsync<T>(db: SqliteDatabase, write: () => T, options: WriteOptions = {}): T {
  const open = openBatch(db);
  if (open !== undefined) return inSavepoint(open, write, options);
  // Inside a caller's transaction the caller's commit decides (and SQLite refuses the pragma there).
  if (db.inTransaction) return write();
  if (db.memory) return withoutFsync(db, () => db.transaction(write).immediate());
  return inSavepoint(beginBatch(db), write, options);
}

/** How a write joins its batch. */
export interface WriteOptions {
  /**
   * The write changes the database with one statement at most, as its last
   * step (reads before it are fine): SQLite undoes a statement that fails
   * by itself, so the write needs no savepoint of its own to be rolled back
   * alone. A savepoint and its release cost about 6 µs a write here, and a
   * local run makes some ten such writes (a queue acknowledgement, a run's
   * update or claim). Never for a write that might change anything twice.
   */
  readonly oneStatement?: boolean;
}

export const ONE_STATEMENT: WriteOptions = { oneStatement: true };

/** What a durable write in a batch is told once the batch's commit is over (writeInBatch). */
export interface BatchCommit {
  /** The batch committed: `batch` tells the writes committed together (one object per batch). */
  committed(batch: object): void;
  /** The batch's commit failed and it was rolled back, this write with it. */
  failed(error: unknown): void;
}

/**
 * Run `write` in the connection's write batch (opening one) and tell `commit`
 * when the batch's commit is over; the batch's COMMIT then carries
 * DURABLE_COMMIT. A `write` that throws is rolled back alone, and `commit`
 * is not told. Only for a file database outside a caller's transaction.
 */
export function writeInBatch<T>(
  db: SqliteDatabase,
  write: () => T,
  commit: BatchCommit,
  options: WriteOptions = {},
): T {
  const batch = openBatch(db) ?? beginBatch(db);
  const value = inSavepoint(batch, write, options);
  batch.told.push(commit);
  return value;
}

/** True when the connection's open write batch holds a durable write (writeInBatch). */
export function batchHoldsDurableWrites(db: SqliteDatabase): boolean {
  return (openBatch(db)?.told.length ?? 0) > 0;
}

/** True when a write batch is open on the connection. */
export function batchIsOpen(db: SqliteDatabase): boolean {
  return openBatch(db) !== undefined;
}

/**
 * Commit the connection's open write batch now, if there is one (before a
 * write that needs SQLite's own fsync, before closing the connection).
 */
export function commitPendingWrites(db: SqliteDatabase): void {
  const batch = openBatch(db);
  if (batch !== undefined) endBatch(batch);
}

/**
 * Run `write` as one IMMEDIATE transaction committed with SQLite's own fsync
 * (`synchronous = FULL`), for writes that must be on disk when they return
 * and are not grouped (targets, account holds, launch slots, fsynced queue
 * sends). The open write batch is committed first, so no unsynced write of
 * the turn joins this commit unawares; inside a caller's transaction the
 * caller's commit decides. The counterpart of `commitWithoutFsync`: every
 * write on local mode's connection goes through one of the two, or through
 * `durableWrite` (group-commit.ts).
 *
 * @example
 * const removed = commitWithFsync(db, () => deleteTarget.run(id).changes > 0);
 */
export function commitWithFsync<T>(db: SqliteDatabase, write: () => T): T {
  commitPendingWrites(db);
  // Batches leave the connection at NORMAL (synchronousLevel); inside a caller's transaction SQLite refuses
  // the pragma, and the caller's commit decides.
  const sync = synchronousLevel(db);
  if (!sync.isFull() && !db.inTransaction) sync.setFull();
  return db.transaction(write).immediate();
}

/** Close the connection, committing its open write batch first. */
export function closeDatabase(db: SqliteDatabase): void {
  if (db.open) commitPendingWrites(db);
  db.close();
}

/** The COMMIT of a batch holding a durable write (a statement trace's marker: test/support/commit-counter.ts). */
export const DURABLE_COMMIT = 'COMMIT /* durable: the WAL is fsynced next (group-commit.ts) */';

interface Batch {
  readonly db: SqliteDatabase;
  open: boolean;
  /** The durable writes in the batch, to tell of its commit. */
  told: BatchCommit[];
  readonly begin: Database.Statement<[]>;
  readonly commit: Database.Statement<[]>;
  readonly commitDurable: Database.Statement<[]>;
  readonly rollback: Database.Statement<[]>;
  readonly savepoint: Database.Statement<[]>;
  readonly release: Database.Statement<[]>;
  readonly rollbackTo: Database.Statement<[]>;
}
const batches = new WeakMap<SqliteDatabase, Batch>();

function openBatch(db: SqliteDatabase): Batch | undefined {
  const batch = batches.get(db);
  return batch?.open === true ? batch : undefined;
}

function beginBatch(db: SqliteDatabase): Batch {
  let batch = batches.get(db);
  if (batch === undefined) {
    batch = {
      db,
      open: false,
      told: [],
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      commitDurable: db.prepare(DURABLE_COMMIT),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT batched_write'),
      release: db.prepare('RELEASE batched_write'),
      rollbackTo: db.prepare('ROLLBACK TO batched_write'),
    };
    batches.set(db, batch);
  }
  const sync = synchronousLevel(db);
  if (sync.isFull()) sync.setNormal();
  batch.begin.run();
  batch.open = true;
  const opened = batch;
  setImmediate(() => {
    if (!opened.open || !opened.db.open) return;
    try {
      endBatch(opened);
    } catch (error) {
      // Its durable writes are rejected (endBatch); the others are lost as a power cut would lose them, and as
      // harmlessly (durability.ts).
      process.emitWarning(`SQLite: a batch of writes could not be committed: ${String(error)}`);
    }
  });
  return batch;
}

function inSavepoint<T>(batch: Batch, write: () => T, options: WriteOptions): T {
  if (options.oneStatement === true) return write();
  batch.savepoint.run();
  try {
    const value = write();
    batch.release.run();
    return value;
  } catch (error) {
    batch.rollbackTo.run();
    batch.release.run();
    throw error;
  }
}

/** Commit the batch; should that fail, roll it back as a whole. Then tell its durable writes. */
function endBatch(batch: Batch): void {
  batch.open = false;
  const told = batch.told;
  batch.told = [];
  try {
    (told.length > 0 ? batch.commitDurable : batch.commit).run();
  } catch (error) {
    if (batch.db.inTransaction) batch.rollback.run();
    for (const t of told) t.failed(error);
    throw error;
  }
  const id = {};
  for (const t of told) t.committed(id);
}

/** Run `commit` — one whole transaction, begun and committed by it — with `synchronous = NORMAL`. */
function withoutFsync<T>(db: SqliteDatabase, commit: () => T): T {
  const sync = synchronousLevel(db);
  if (sync.isFull()) sync.setNormal();
  return commit();
}

const SYNCHRONOUS_FULL = 2;

interface SynchronousLevel {
  isFull(): boolean;
  setNormal(): void;
  setFull(): void;
}
const synchronousByConnection = new WeakMap<SqliteDatabase, SynchronousLevel>();

/**
 * The connection's `synchronous` level: read once, then kept here as these
 * functions set it. It is set only when it has to change: a batch needs
 * NORMAL and leaves the connection there, and `commitWithFsync` sets FULL
 * for its commit, so a run of batches with no such write between them sets
 * nothing (each batch set it twice when it went back to FULL after every
 * one, some 15 µs each; reading it cost about 30 µs a batch). Every write on
 * the connection goes through this module's functions or durableWrite
 * (group-commit.ts), which choose the level they need; none relies on where
 * it rests.
 *
 * Set through `db.pragma()`, compiled each time, not a prepared statement:
 * SQLite changes the level when it compiles the pragma, so a prepared one
 * sets it when prepared and its first run does nothing (only later runs,
 * recompiled, act).
 */
function synchronousLevel(db: SqliteDatabase): SynchronousLevel {
  let level = synchronousByConnection.get(db);
  if (level === undefined) {
    let isFull = db.pragma('synchronous', { simple: true }) === SYNCHRONOUS_FULL;
    level = {
      isFull: () => isFull,
      setNormal() {
        db.pragma('synchronous = NORMAL');
        isFull = false;
      },
      setFull() {
        db.pragma('synchronous = FULL');
        isFull = true;
      },
    };
    synchronousByConnection.set(db, level);
  }
  return level;
}
