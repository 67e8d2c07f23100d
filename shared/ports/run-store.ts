import { encodeIdCursor } from '../domain/cursor.ts';
import type { Run, RunState } from '../domain/run.ts';

export interface RunQuery {
  readonly batchId?: string;
  readonly state?: RunState;
  /** 1..100 */
  readonly limit: number;
  /** Opaque cursor from a previous page's `nextCursor`. */
  readonly cursor?: string;
}

export interface RunPage {
  readonly runs: readonly Run[];
  readonly nextCursor?: string;
}

/**
 * A page from `limit + 1` rows read (newest first): one extra row tells
 * whether another page exists without a second query; the cursor is the last
 * run id of the page, which `id < after` resumes from.
 */
export function pageOf<T>(rows: readonly T[], limit: number, runOf: (row: T) => Run): RunPage {
  const runs = rows.slice(0, limit).map(runOf);
  const last = runs.at(-1);
  return rows.length > limit && last !== undefined ? { runs, nextCursor: encodeIdCursor(last.id) } : { runs };
}

/** A relay's claim of the run a relay message was sent for (RunStore.claimRelayRun). */
export interface RelayClaimRequest {
  /** `relay:<relay id>`. */
  readonly owner: string;
  readonly at: string;
  /** The run's version the message was sent for (its `local` launch intent). */
  readonly sentVersion: number;
}

/** The claimed run, or — when the claim did not apply — the run as stored (undefined: no such run). */
export type RelayClaimResult =
  | { readonly claimed: true; readonly run: Run }
  | { readonly claimed: false; readonly run: Run | undefined };

export interface CreateRunOptions {
  /** Client `Idempotency-Key`; with `fingerprint` (hash of the request) it makes a retried submit return the first run. */
  readonly idempotencyKey?: string;
  readonly fingerprint?: string;
}

/**
 * Durable record of runs (the target registry is TargetStore). Every run
 * write is conditional on the version the caller read, so concurrent writers
 * cannot lose each other's changes and a terminal run is never overwritten.
 *
 * @example
 * const { run } = await store.createRun(newRun(input, clock.now()));
 * const claimed = await store.updateRun(transition(run, 'dispatching', clock.now()), run.version);
 */
export interface RunStore {
  /**
   * Insert a new run. With an idempotency key already used by the same
   * fingerprint, returns the existing run and `created: false`; with a
   * different fingerprint throws IdempotencyMismatchError.
   */
  createRun(run: Run, options?: CreateRunOptions): Promise<{ run: Run; created: boolean }>;
  /** Insert several runs atomically (a batch): all or none. */
  createRuns(runs: readonly Run[]): Promise<void>;
  getRun(id: string): Promise<Run | undefined>;
  /**
   * Replace the run if its stored version is still `expectedVersion` and the
   * stored run is not terminal. Throws RunConflictError otherwise.
   */
  updateRun(run: Run, expectedVersion: number): Promise<Run>;
  /** Newest first. */
  listRuns(query: RunQuery): Promise<RunPage>;
  /** Every run not yet in a terminal state, oldest first (reconciler). */
  listActiveRuns(limit: number): Promise<readonly Run[]>;

  /**
   * Hold a managed account for a run, so runs on one account never share a
   * checkout: the account is taken when nobody holds it, when `runId`
   * already does (a redelivery), or when `replacing` does (a holder the
   * caller found ended). Answers who holds it after the call: `runId` when
   * taken, else the other holder. One conditional write.
   */
  holdAccount(account: string, runId: string, options?: { readonly replacing?: string }): Promise<string>;
  /** Let the account go if `runId` holds it; idempotent. */
  releaseAccount(account: string, runId: string): Promise<void>;

  /**
   * The relay's claim, one conditional write that answers the run: it
   * applies only while the stored run is the record the message was sent
   * for (shared/domain/relay-claim.ts `isSentRecord`: `dispatching` at
   * `sentVersion`, or `launched` one above) and a relay may take it
   * (`relayClaimable`); the run becomes `launched`, owned by `owner`, at
   * `claimedVersion(sentVersion)`. Otherwise nothing changes and the stored
   * run comes back, so the caller decides without another read.
   */
  claimRelayRun(runId: string, claim: RelayClaimRequest): Promise<RelayClaimResult>;
  /** Several runs in one read, strongly consistent (the relay's cancel watch); ids with no run are left out. */
  getRuns(ids: readonly string[]): Promise<readonly Run[]>;
}
