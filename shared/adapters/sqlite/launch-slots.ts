import { admits } from '../../domain/launch-cap.ts';
import type { LaunchSlotStore } from '../../ports/launch-cap.ts';
import { commitWithFsync, type SqliteDatabase } from './database.ts';

/**
 * Launch-cap slots in the local-mode SQLite file: a row per held slot in
 * `launch_slots (scope, run_id)`. Acquire reads the scope's holders and
 * inserts in one IMMEDIATE transaction, so two dispatches (or two processes
 * on one file) never both take the last slot. Slots survive a restart like
 * the runs that hold them, and the reconciler prunes those left by runs that
 * ended without letting go.
 *
 * The table is created here rather than as a migration in database.ts: it
 * belongs to this adapter alone, and `IF NOT EXISTS` makes opening an older
 * file harmless.
 *
 * @example
 * const slots = new SqliteLaunchSlots({ db: openDatabase(':memory:') });
 * await slots.acquire('kubernetes#remote-worker', 100, run.id); // true
 */
export class SqliteLaunchSlots implements LaunchSlotStore {
  readonly #db: SqliteDatabase;
  readonly #holders;
  readonly #holds;
  readonly #count;
  readonly #insert;
  readonly #delete;

  constructor(options: { readonly db: SqliteDatabase }) {
    const db = options.db;
    this.#db = db;
    db.exec(`CREATE TABLE IF NOT EXISTS launch_slots (
      scope  TEXT NOT NULL,
      run_id TEXT NOT NULL,
      PRIMARY KEY (scope, run_id)
    ) STRICT, WITHOUT ROWID`);
    this.#holders = db
      .prepare<[string], string>('SELECT run_id FROM launch_slots WHERE scope = ? ORDER BY run_id')
      .pluck();
    this.#holds = db.prepare<[string, string], number>(
      'SELECT 1 FROM launch_slots WHERE scope = ? AND run_id = ?',
    );
    this.#count = db.prepare<[string], number>('SELECT count(*) FROM launch_slots WHERE scope = ?').pluck();
    this.#insert = db.prepare<[string, string]>('INSERT INTO launch_slots (scope, run_id) VALUES (?, ?)');
    this.#delete = db.prepare<[string, string]>('DELETE FROM launch_slots WHERE scope = ? AND run_id = ?');
  }

  async acquire(scope: string, cap: number, runId: string): Promise<boolean> {
    return commitWithFsync(this.#db, (): boolean => {
      const holdsOne = this.#holds.get(scope, runId) !== undefined;
      if (!admits({ holdsOne, held: holdsOne ? 0 : (this.#count.get(scope) ?? 0) }, cap)) return false;
      if (!holdsOne) this.#insert.run(scope, runId);
      return true;
    });
  }

  async release(scope: string, runId: string): Promise<void> {
    commitWithFsync(this.#db, () => this.#delete.run(scope, runId));
  }

  async holders(scope: string): Promise<readonly string[]> {
    return this.#holders.all(scope);
  }
}
