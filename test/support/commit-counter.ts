/**
 * Counts SQLite commits from a connection's statement trace (openDatabase's
 * `trace`): a transaction that wrote, or a write outside one, is one commit;
 * it is durable (one WAL fsync) unless `synchronous` was below FULL for it
 * and its COMMIT is not a durable write's (database.ts DURABLE_COMMIT).
 * A write that changed no row still counts: the count is an upper bound.
 */
export interface CommitCounter {
  readonly trace: (sql: string) => void;
  /** Durable and unsynced commits so far. */
  counts(): { readonly durable: number; readonly unsynced: number };
  /** The write statements of each durable commit so far, in order (bound values removed). */
  durableCommits(): readonly (readonly string[])[];
}

const WRITE = /^(INSERT|UPDATE|DELETE|REPLACE)\b/i;

export function commitCounter(): CommitCounter {
  let full = true;
  let open: string[] | undefined;
  /** Where each open savepoint began in `open` (a ROLLBACK TO drops the writes after it). */
  let savepoints: number[] = [];
  let durable = 0;
  let unsynced = 0;
  const commits: string[][] = [];
  // A durable write of group-commit.ts commits with synchronous=NORMAL and marks its COMMIT: the WAL fsync
  // it waits for follows, off the event loop (several such commits may share one fsync).
  const commit = (writes: string[], marked = false) => {
    if (full || marked) {
      durable += 1;
      commits.push(writes);
    } else {
      unsynced += 1;
    }
  };
  return {
    trace(sql) {
      const s = sql.trim();
      const pragma = /^PRAGMA\s+synchronous\s*=\s*(\w+)/i.exec(s);
      if (pragma?.[1] !== undefined) {
        full = ['FULL', 'EXTRA', '2', '3'].includes(pragma[1].toUpperCase());
      } else if (/^BEGIN\b/i.test(s)) {
        open = [];
        savepoints = [];
      } else if (/^SAVEPOINT\b/i.test(s)) {
        savepoints.push(open?.length ?? 0);
      } else if (/^RELEASE\b/i.test(s)) {
        savepoints.pop();
      } else if (/^ROLLBACK\s+TO\b/i.test(s)) {
        if (open !== undefined) open.length = savepoints.at(-1) ?? open.length;
      } else if (/^COMMIT\b/i.test(s)) {
        if (open !== undefined && open.length > 0) commit(open, /durable/i.test(s));
        open = undefined;
      } else if (/^ROLLBACK\b/i.test(s)) {
        open = undefined;
      } else if (WRITE.test(s)) {
        const shape = s.split(/\s+/).slice(0, 3).join(' ');
        if (open === undefined) commit([shape]);
        else open.push(shape);
      }
    },
    counts: () => ({ durable, unsynced }),
    durableCommits: () => commits,
  };
}
