import type { RunStore } from '../../ports/run-store.ts';
import type { SqliteDatabase } from './database.ts';
import { whenDurable } from './group-commit.ts';

/** The reads a client is answered from. */
const CLIENT_READS: ReadonlySet<PropertyKey> = new Set(['getRun', 'getRuns', 'listRuns']);

/**
 * The run store as the API sees it: a read first waits for the fsync of
 * every durable write already committed (group-commit.ts), so a client is
 * never shown a submit, a terminal state or a cancel that a power cut could
 * still take back — as with SQLite's own `synchronous = FULL` commit, which
 * readers see only once it is on disk. The dispatcher and the relay read the
 * store directly: what they act on outside the process waits for a durable
 * write of their own, whose fsync covers everything committed before it.
 * Writes that commit without an fsync on purpose (durability.ts) stay
 * visible at once, as before. Only waits when an fsync is pending.
 *
 * @example
 * const apiDeps = { ...deps, store: withDurableReads(store, db) };
 */
export function withDurableReads<S extends RunStore>(store: S, db: SqliteDatabase): S {
  return new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (!CLIENT_READS.has(property)) return method.bind(target);
      return async (...args: unknown[]) => {
        const pending = whenDurable(db);
        if (pending !== undefined) await pending;
        return method.apply(target, args);
      };
    },
  });
}
