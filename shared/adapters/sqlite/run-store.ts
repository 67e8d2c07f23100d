import { decodeIdCursor } from '../../domain/cursor.ts';
import {
  IdempotencyMismatchError,
  NotFoundError,
  RunConflictError,
  ValidationError,
} from '../../domain/errors.ts';
import { checkLimit } from '../../domain/page-limit.ts';
import { RUN_STATES, type Run, TERMINAL_STATES } from '../../domain/run.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import {
  advanceApplies,
  advancedRun,
  type CreateRunOptions,
  claimedRun,
  pageOf,
  type RelayClaimRequest,
  type RelayClaimResult,
  type RunAdvance,
  type RunAdvanceResult,
  type RunClaim,
  type RunPage,
  type RunQuery,
  type RunStore,
} from '../../ports/run-store.ts';
import { commitWithFsync, commitWithoutFsync, ONE_STATEMENT, type SqliteDatabase } from './database.ts';
import { mayDeferFsync } from './durability.ts';
import { durableWrite } from './group-commit.ts';
import { sqliteGetRuns, sqliteRelayClaim } from './relay-claim.ts';
import { SqliteWorkQueue } from './work-queue.ts';

const MAX_PAGE = 100;
const DEFAULT_IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

// Built from the domain's constants, never from input, so inlining them in SQL is safe.
const sqlList = (values: readonly string[]): string => values.map((v) => `'${v}'`).join(', ');
const TERMINAL_SQL = sqlList(TERMINAL_STATES);
const ACTIVE_SQL = sqlList(RUN_STATES.filter((s) => !(TERMINAL_STATES as readonly string[]).includes(s)));

interface RunRow {
  readonly body: string;
}
interface KeyRow {
  readonly fingerprint: string;
  readonly run_id: string;
}

/** A durable write that writes nothing: it waits for the fsync of the batch it joins. */
const noWrite = (): void => {};

/**
 * RunStore over the local-mode SQLite file. A run is stored as JSON next to
 * the columns queries need (state, batch id, version), so the domain model can
 * grow without a migration.
 *
 * Idempotency keys live `idempotencyTtlSeconds` (default 24 h, like common
 * `Idempotency-Key` practice); after that the same key starts a new run.
 *
 * @example
 * const store = new SqliteRunStore({ db: openDatabase(':memory:') });
 * const { run, created } = await store.createRun(newRun(input, clock.now()), { idempotencyKey, fingerprint });
 * await store.updateRun(transition(run, 'dispatching', clock.now()), run.version);
 */
export class SqliteRunStore implements RunStore {
  readonly #db: SqliteDatabase;
  readonly #clock: Clock;
  readonly #idempotencyTtlMs: number;
  readonly #listStatements = new Map<string, { all(...params: unknown[]): RunRow[] }>();

  readonly #insertRun;
  readonly #getRun;
  readonly #versionOf;
  readonly #updateRun;
  readonly #activeRuns;
  readonly #purgeKeys;
  readonly #getKey;
  readonly #insertKey;
  readonly #getHold;
  readonly #putHold;
  readonly #deleteHold;
  readonly #claimRun;
  readonly #relayClaim;
  readonly #getRuns;

  constructor(options: { db: SqliteDatabase; clock?: Clock; idempotencyTtlSeconds?: number }) {
    const db = options.db;
    this.#db = db;
    this.#clock = options.clock ?? systemClock;
    this.#idempotencyTtlMs = (options.idempotencyTtlSeconds ?? DEFAULT_IDEMPOTENCY_TTL_SECONDS) * 1000;

    this.#insertRun = db.prepare<[string, string, string | null, string, number, string]>(
      'INSERT INTO runs (id, state, batch_id, created_at, version, body) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.#getRun = db.prepare<[string], RunRow>('SELECT body FROM runs WHERE id = ?');
    this.#versionOf = db.prepare<[string], number>('SELECT version FROM runs WHERE id = ?').pluck();
    this.#updateRun = db.prepare<[string, string | null, number, string, string, number]>(
      `UPDATE runs SET state = ?, batch_id = ?, version = ?, body = ?
       WHERE id = ? AND version = ? AND state NOT IN (${TERMINAL_SQL})`,
    );
    this.#activeRuns = db.prepare<[number], RunRow>(
      `SELECT body FROM runs WHERE state IN (${ACTIVE_SQL}) ORDER BY id ASC LIMIT ?`,
    );
    this.#purgeKeys = db.prepare<[number]>('DELETE FROM idempotency_keys WHERE expires_ms <= ?');
    this.#getKey = db.prepare<[string], KeyRow>(
      'SELECT fingerprint, run_id FROM idempotency_keys WHERE key = ?',
    );
    this.#insertKey = db.prepare<[string, string, string, number]>(
      'INSERT OR REPLACE INTO idempotency_keys (key, fingerprint, run_id, expires_ms) VALUES (?, ?, ?, ?)',
    );
    this.#getHold = db.prepare<[string], { run_id: string }>(
      'SELECT run_id FROM account_holds WHERE account = ?',
    );
    this.#putHold = db.prepare<[string, string, number]>(
      'INSERT OR REPLACE INTO account_holds (account, run_id, since_ms) VALUES (?, ?, ?)',
    );
    this.#deleteHold = db.prepare<[string, string]>(
      'DELETE FROM account_holds WHERE account = ? AND run_id = ?',
    );
    this.#claimRun = db.prepare<[number, string, string]>(
      `UPDATE runs SET state = 'dispatching', version = ?, body = ? WHERE id = ? AND state = 'queued'`,
    );
    this.#relayClaim = sqliteRelayClaim(db);
    this.#getRuns = sqliteGetRuns(db);
  }

  /**
   * One durable commit (its fsync shared with concurrent ones: group-commit.ts): the run, its idempotency key and, when `options.enqueue`
   * names a queue in this database, its message (so a run is never recorded
   * without it, nor announced without being recorded).
   */
  async createRun(
    run: Run,
    options: CreateRunOptions = {},
  ): Promise<{ run: Run; created: boolean; enqueued?: boolean }> {
    const { idempotencyKey, fingerprint } = options;
    if (idempotencyKey !== undefined && fingerprint === undefined) {
      // Without a fingerprint a retried key could silently return a run for a different request.
      throw new ValidationError('An idempotency key needs a request fingerprint', [
        { path: 'fingerprint', message: 'required with idempotencyKey' },
      ]);
    }
    const message = options.enqueue;
    const queue =
      message?.queue instanceof SqliteWorkQueue && message.queue.usesDatabase(this.#db)
        ? message.queue
        : undefined;
    let wake: (() => void) | undefined;
    const durable = durableWrite(this.#db, (): { run: Run; created: boolean; enqueued?: boolean } => {
      if (idempotencyKey !== undefined && fingerprint !== undefined) {
        const first = this.#firstRunFor(idempotencyKey, fingerprint);
        if (first !== undefined) return { run: first, created: false };
      }
      this.#insert(run);
      if (idempotencyKey !== undefined && fingerprint !== undefined) {
        this.#insertKey.run(
          idempotencyKey,
          fingerprint,
          run.id,
          this.#clock.nowMs() + this.#idempotencyTtlMs,
        );
      }
      if (queue === undefined || message === undefined) return { run, created: true };
      wake = queue.sendWithin(this.#db, message.body);
      return { run, created: true, enqueued: true };
    });
    // Committed, not yet fsynced: the dispatcher may run before the fsync (local mode wakes it at once, and the
    // fsync begins after this turn: group-commit.ts). It tells nobody outside the process before a durable
    // write of its own, whose fsync covers this commit too (the WAL is written in order: durability.ts); the
    // 202 still waits for this one's fsync.
    wake?.();
    return durable;
  }

  /** The run an unexpired key already made, if any; a key used for a different request throws. */
  #firstRunFor(idempotencyKey: string, fingerprint: string): Run | undefined {
    this.#purgeKeys.run(this.#clock.nowMs());
    const existing = this.#getKey.get(idempotencyKey);
    if (existing === undefined) return undefined;
    if (existing.fingerprint !== fingerprint) {
      throw new IdempotencyMismatchError(
        `Idempotency key "${idempotencyKey}" was already used for a different request (run ${existing.run_id})`,
      );
    }
    return this.#read(existing.run_id);
  }

  async createRuns(runs: readonly Run[]): Promise<void> {
    await durableWrite(this.#db, () => {
      for (const run of runs) this.#insert(run);
    });
  }

  async getRun(id: string): Promise<Run | undefined> {
    return this.#read(id);
  }

  async updateRun(run: Run, expectedVersion: number): Promise<Run> {
    if (run.version <= expectedVersion) {
      // Writing the same version back would let a later writer's condition pass against changed data.
      throw new ValidationError(
        `Run ${run.id}: the new version (${run.version}) must be greater than the expected version (${expectedVersion})`,
      );
    }
    const write = () =>
      this.#updateRun.run(
        run.state,
        run.batchId ?? null,
        run.version,
        JSON.stringify(run),
        run.id,
        expectedVersion,
      );
    // A local run's steps before the relay's (durable) claim need no fsync of their own: durability.ts.
    const deferrable = mayDeferFsync(run);
    // A write bound to lose its version check is found out by reading the version alone, before the run is
    // serialised and written for nothing (local mode's dispatcher loses its `launched` write to the relay's
    // claim on nearly every run). It still waits for the fsync a durable write would have waited for.
    if (this.#versionOf.get(run.id) !== expectedVersion) {
      if (!deferrable) await durableWrite(this.#db, noWrite, undefined, ONE_STATEMENT);
    } else {
      const result = deferrable
        ? commitWithoutFsync(this.#db, write, ONE_STATEMENT)
        : await durableWrite(this.#db, write, undefined, ONE_STATEMENT);
      if (result.changes === 1) return run;
    }

    // The stored run, which a caller retrying decides from (RunConflictError.current) instead of reading it.
    const stored = this.#read(run.id);
    if (stored === undefined) throw new NotFoundError(`Run ${run.id} does not exist`);
    if ((TERMINAL_STATES as readonly string[]).includes(stored.state)) {
      throw new RunConflictError(
        `Run ${run.id} is ${stored.state} (version ${stored.version}) and can no longer change; the write expected version ${expectedVersion}`,
        { current: stored },
      );
    }
    throw new RunConflictError(
      `Run ${run.id} was changed by someone else: expected version ${expectedVersion}, found version ${stored.version}`,
      { current: stored },
    );
  }

  async listRuns(query: RunQuery): Promise<RunPage> {
    const { limit } = query;
    checkLimit(limit, MAX_PAGE);
    const after = query.cursor === undefined ? undefined : decodeIdCursor(query.cursor);

    const clauses: string[] = [];
    const params: (string | number)[] = [];
    if (query.batchId !== undefined) {
      clauses.push('batch_id = ?');
      params.push(query.batchId);
    }
    if (query.state !== undefined) {
      clauses.push('state = ?');
      params.push(query.state);
    }
    if (after !== undefined) {
      clauses.push('id < ?');
      params.push(after);
    }
    const where = clauses.length === 0 ? '' : `WHERE ${clauses.join(' AND ')}`;
    const sql = `SELECT body FROM runs ${where} ORDER BY id DESC LIMIT ?`;
    let statement = this.#listStatements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare<unknown[], RunRow>(sql);
      this.#listStatements.set(sql, statement);
    }

    // One extra row tells whether another page exists without a second query.
    return pageOf(statement.all(...params, limit + 1), limit, (r) => JSON.parse(r.body) as Run);
  }

  async listActiveRuns(limit: number): Promise<readonly Run[]> {
    // SQLite reads a negative LIMIT as "no limit"; the reconciler must not load the whole table by mistake.
    checkLimit(limit);
    return this.#activeRuns.all(limit).map((r) => JSON.parse(r.body) as Run);
  }

  async holdAccount(account: string, runId: string, options: { replacing?: string } = {}): Promise<string> {
    return commitWithFsync(this.#db, (): string => {
      const holder = this.#getHold.get(account)?.run_id;
      if (holder === runId) return runId;
      if (holder !== undefined && holder !== options.replacing) return holder;
      this.#putHold.run(account, runId, this.#clock.nowMs());
      return runId;
    });
  }

  async releaseAccount(account: string, runId: string): Promise<void> {
    commitWithFsync(this.#db, () => this.#deleteHold.run(account, runId));
  }

  /**
   * One transaction, so one durable commit (group-commit.ts): the queued run is
   * turned into its claim in process and written with one UPDATE … WHERE
   * state = 'queued', and answered as written; any other run is answered as stored. The
   * run is read once, in the write: whether the answer waits for an fsync is
   * decided from what the write found.
   */
  async claimRun(id: string, claim: RunClaim): Promise<{ run: Run; claimed: boolean } | undefined> {
    const write = (): { run: Run; claimed: boolean } | undefined => {
      const stored = this.#read(id);
      if (stored?.state !== 'queued')
        return stored === undefined ? undefined : { run: stored, claimed: false };
      const next = claimedRun(stored, claim);
      // The run as written, as updateRun answers: parsing back what was just serialised would give the same.
      return this.#claimRun.run(next.version, JSON.stringify(next), id).changes === 1
        ? { run: next, claimed: true }
        : { run: stored, claimed: false };
    };
    const result = commitWithoutFsync(this.#db, write, ONE_STATEMENT);
    // A local run's claim is one of the steps before the relay's durable claim (durability.ts): no fsync of its
    // own. Any other answer waits for the fsync of the batch that holds it, as a durable write would.
    if (result?.claimed !== true || !mayDeferFsync(result.run))
      await durableWrite(this.#db, noWrite, undefined, ONE_STATEMENT);
    return result;
  }

  /**
   * One durable transaction (a group commit): the check and the write (shared/adapters/sqlite/relay-claim.ts).
   * `onCommitted` hears of the claim at its commit, before the fsync it resolves after.
   */
  async claimRelayRun(runId: string, claim: RelayClaimRequest): Promise<RelayClaimResult> {
    const { onCommitted } = claim;
    return durableWrite(
      this.#db,
      () => this.#relayClaim(runId, claim),
      onCommitted === undefined
        ? undefined
        : (result) => {
            if (result.claimed) onCommitted(result.run);
          },
      ONE_STATEMENT,
    );
  }

  async getRuns(ids: readonly string[]): Promise<readonly Run[]> {
    return this.#getRuns(ids);
  }

  /** One durable transaction (a group commit): the check (advanceApplies) and the write of advancedRun. */
  async advanceRun(id: string, advance: RunAdvance): Promise<RunAdvanceResult> {
    const write = (): RunAdvanceResult => {
      const stored = this.#read(id);
      if (stored === undefined || !advanceApplies(stored, advance)) return { advanced: false, run: stored };
      const next = advancedRun(stored, advance);
      this.#updateRun.run(
        next.state,
        next.batchId ?? null,
        next.version,
        JSON.stringify(next),
        id,
        stored.version,
      );
      return { advanced: true, run: next };
    };
    return durableWrite(this.#db, write, undefined, ONE_STATEMENT);
  }

  #read(id: string): Run | undefined {
    const row = this.#getRun.get(id);
    return row === undefined ? undefined : (JSON.parse(row.body) as Run);
  }

  #insert(run: Run): void {
    try {
      this.#insertRun.run(
        run.id,
        run.state,
        run.batchId ?? null,
        run.createdAt,
        run.version,
        JSON.stringify(run),
      );
    } catch (error) {
      if (isUniqueViolation(error)) {
        throw new RunConflictError(`Run ${run.id} already exists`, { cause: error });
      }
      throw error;
    }
  }
}

function isUniqueViolation(error: unknown): boolean {
  return (
    error instanceof Error &&
    'code' in error &&
    (error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || error.code === 'SQLITE_CONSTRAINT_UNIQUE')
  );
}
