import type { Target } from '../../domain/target.ts';
import type { TargetStore } from '../../ports/target-store.ts';
import { commitWithFsync, type SqliteDatabase } from './database.ts';

interface BodyRow {
  readonly body: string;
}

/**
 * TargetStore over the local-mode SQLite file (table `targets`, beside the
 * runs): each target as JSON under its id.
 *
 * @example
 * const targets = new SqliteTargetStore({ db: openDatabase(':memory:') });
 * await targets.putTarget(target);
 * const names = (await targets.listTargets()).map((t) => t.id);
 */
export class SqliteTargetStore implements TargetStore {
  readonly #db: SqliteDatabase;
  readonly #put;
  readonly #get;
  readonly #list;
  readonly #delete;

  constructor(options: { db: SqliteDatabase }) {
    const db = options.db;
    this.#db = db;
    this.#put = db.prepare<[string, string]>(
      'INSERT INTO targets (id, body) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET body = excluded.body',
    );
    this.#get = db.prepare<[string], BodyRow>('SELECT body FROM targets WHERE id = ?');
    this.#list = db.prepare<[], BodyRow>('SELECT body FROM targets ORDER BY id ASC');
    this.#delete = db.prepare<[string]>('DELETE FROM targets WHERE id = ?');
  }

  /** Upsert; the first `createdAt` of a target is kept so a re-PUT does not rewrite its history. */
  async putTarget(target: Target): Promise<Target> {
    return commitWithFsync(this.#db, (): Target => {
      const existing = this.#get.get(target.id);
      const createdAt =
        existing === undefined ? target.createdAt : (JSON.parse(existing.body) as Target).createdAt;
      const stored: Target = { ...target, createdAt };
      this.#put.run(target.id, JSON.stringify(stored));
      return stored;
    });
  }

  async getTarget(id: string): Promise<Target | undefined> {
    const row = this.#get.get(id);
    return row === undefined ? undefined : (JSON.parse(row.body) as Target);
  }

  async listTargets(): Promise<readonly Target[]> {
    return this.#list.all().map((r) => JSON.parse(r.body) as Target);
  }

  async deleteTarget(id: string): Promise<boolean> {
    return commitWithFsync(this.#db, () => this.#delete.run(id).changes > 0);
  }
}
