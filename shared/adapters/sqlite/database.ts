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
 * process.on('exit', () => db.close());
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
 * Run `write` as one IMMEDIATE transaction committed without an fsync
 * (`synchronous = NORMAL` for this commit only). For writes whose loss in a
 * power cut is harmless because it only undoes a lease: a queue receive, a
 * visibility change, an acknowledgement (the message comes back and the
 * consumer, idempotent, skips it). A killed process loses nothing (WAL pages
 * are in the OS cache), and the next durable commit's fsync covers these
 * frames too, since the WAL is written in order.
 */
export function commitWithoutFsync<T>(db: SqliteDatabase, write: () => T): T {
  // Inside a caller's transaction the caller's commit decides (and SQLite refuses the pragma there).
  if (db.inTransaction) return write();
  return withoutFsync(db, () => db.transaction(write).immediate());
}

/**
 * Run `commit` — one whole transaction, begun and committed by it — with
 * `synchronous = NORMAL`, then set the connection back to FULL.
 */
export function withoutFsync<T>(db: SqliteDatabase, commit: () => T): T {
  const sync = synchronousStatements(db);
  if (sync.level.get() !== SYNCHRONOUS_FULL) return commit();
  sync.normal.run();
  try {
    return commit();
  } finally {
    sync.full.run();
  }
}

const SYNCHRONOUS_FULL = 2;

type SynchronousStatements = {
  readonly level: Database.Statement<[], number>;
  readonly normal: Database.Statement<[]>;
  readonly full: Database.Statement<[]>;
};
const synchronousByConnection = new WeakMap<SqliteDatabase, SynchronousStatements>();

/**
 * The three `synchronous` pragmas, prepared once per connection: `db.pragma()` compiles its statement on
 * every call, and a run's unsynced commits issue three each.
 */
function synchronousStatements(db: SqliteDatabase): SynchronousStatements {
  let statements = synchronousByConnection.get(db);
  if (statements === undefined) {
    statements = {
      level: db.prepare<[], number>('PRAGMA synchronous').pluck(),
      normal: db.prepare<[]>('PRAGMA synchronous = NORMAL'),
      full: db.prepare<[]>('PRAGMA synchronous = FULL'),
    };
    synchronousByConnection.set(db, statements);
  }
  return statements;
}
