import { claimedVersion, claimForRelay, isSentRecord, relayClaimable } from '../../domain/relay-claim.ts';
import type { Run } from '../../domain/run.ts';
import type { RelayClaimRequest, RelayClaimResult } from '../../ports/run-store.ts';
import type { SqliteDatabase } from './database.ts';

interface BodyRow {
  readonly body: string;
}

/**
 * The relay claim (RunStore.claimRelayRun) on SQLite: the check and the
 * write, for one durable transaction (the run store runs it in a group
 * commit, group-commit.ts), so nobody can write between them.
 *
 * @example
 * const { claimed, run } = await durableWrite(db, () => sqliteRelayClaim(db)('run-1', { owner: 'relay:r1', at, sentVersion: 3 }));
 */
export function sqliteRelayClaim(
  db: SqliteDatabase,
): (runId: string, c: RelayClaimRequest) => RelayClaimResult {
  const read = db.prepare<[string], BodyRow>('SELECT body FROM runs WHERE id = ?');
  const write = db.prepare<[string, number, string, string, number]>(
    'UPDATE runs SET state = ?, version = ?, body = ? WHERE id = ? AND version = ?',
  );
  return (runId: string, c: RelayClaimRequest): RelayClaimResult => {
    const row = read.get(runId);
    const run = row === undefined ? undefined : (JSON.parse(row.body) as Run);
    if (run === undefined || !isSentRecord(run, c.sentVersion) || !relayClaimable(run)) {
      return { claimed: false, run };
    }
    const claimed = claimForRelay(run, c.owner, c.at, claimedVersion(c.sentVersion));
    write.run(claimed.state, claimed.version, JSON.stringify(claimed), runId, run.version);
    return { claimed: true, run: claimed };
  };
}

/**
 * Several runs in one query (RunStore.getRuns).
 *
 * @example
 * const runs = sqliteGetRuns(db)(['run-1', 'run-2']);
 */
export function sqliteGetRuns(db: SqliteDatabase): (ids: readonly string[]) => Run[] {
  const select = db.prepare<[string], BodyRow>(
    'SELECT body FROM runs WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id',
  );
  return (ids) =>
    ids.length === 0 ? [] : select.all(JSON.stringify(ids)).map((r) => JSON.parse(r.body) as Run);
}
