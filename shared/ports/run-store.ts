import { encodeIdCursor } from '../domain/cursor.ts';
import { isTerminal, type Run, type RunState, transition } from '../domain/run.ts';
import type { WorkQueue } from './work-queue.ts';

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
  /**
   * Called with the claimed run once the claim is committed, when the store can tell that before the claim is
   * durable (SQLite's group commit); never for a claim that did not apply. The relay may prepare the task
   * meanwhile: nothing may be started, nor anyone outside the process told, before the claim resolves.
   * Must not throw.
   */
  readonly onCommitted?: (run: Run) => void;
}

/** The claimed run, or — when the claim did not apply — the run as stored (undefined: no such run). */
export type RelayClaimResult =
  | { readonly claimed: true; readonly run: Run }
  | { readonly claimed: false; readonly run: Run | undefined };

export interface CreateRunOptions {
  /** Client `Idempotency-Key`; with `fingerprint` (hash of the request) it makes a retried submit return the first run. */
  readonly idempotencyKey?: string;
  readonly fingerprint?: string;
  /**
   * The message that announces a newly created run. A store that can write
   * to this queue in the run's own transaction sends it in the same commit
   * and answers `enqueued: true`; any other store leaves it to the caller
   * (DynamoDB and SQS: the run write, then SendMessage). Never sent for a
   * run answered from an idempotency key (`created: false`).
   */
  readonly enqueue?: { readonly queue: WorkQueue; readonly body: string };
}

export interface CreateRunResult {
  readonly run: Run;
  readonly created: boolean;
  /** True when `options.enqueue` was sent with the run, in one commit. */
  readonly enqueued?: boolean;
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
  createRun(run: Run, options?: CreateRunOptions): Promise<CreateRunResult>;
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
   * Claim a `queued` run for dispatch in ONE conditional write, with no read
   * before it: the run becomes `dispatching` with `owner`, the next attempt
   * and the launch intent (its `runner`, intent at `claim.at`), exactly as
   * {@link claimedRun} describes. Answers the run after the write and
   * `claimed: true`; for a run that is not queued (dispatching — a
   * redelivery —, launched, ended) the run as stored and `claimed: false`;
   * undefined when there is no such run.
   */
  claimRun(
    id: string,
    claim: RunClaim,
  ): Promise<{ readonly run: Run; readonly claimed: boolean } | undefined>;
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
  /**
   * A backend's report that a launched run moved forward, as ONE conditional
   * write with no read before it: it applies only while {@link advanceApplies}
   * holds for the stored run (in `from`, on the attempt, the same task at a
   * lower order, no cancel request, nothing held that its end must release),
   * and the run becomes {@link advancedRun}. Answers the run after the write
   * and `advanced: true`; otherwise nothing changes and the stored run comes
   * back (undefined: no such run), for the caller's read-modify-write path.
   */
  advanceRun(id: string, advance: RunAdvance): Promise<RunAdvanceResult>;
}

/**
 * One backend observation of a launched run (RunStore.advanceRun). The run's
 * launch handle is `<task>#v<order>` once an observation was applied (the
 * ECS handle's convention: shared/adapters/ecs/handle.ts), and `<task>` before.
 */
export interface RunAdvance {
  /** The attempt the observed task belongs to. */
  readonly attempt: number;
  /** The launch handle without its `#v<order>` suffix. */
  readonly task: string;
  /** The observation's order (ECS: the event's `detail.version`): it must be above the handle's. */
  readonly order: number;
  /** The states the run may be in (never a terminal one). */
  readonly from: readonly RunState[];
  readonly to: RunState;
  readonly at: string;
  readonly reason?: string;
  readonly exitCode?: number;
}

export type RunAdvanceResult =
  | { readonly advanced: true; readonly run: Run }
  | { readonly advanced: false; readonly run: Run | undefined };

const ORDER_SUFFIX = /#v(\d{1,15})$/;

/** A launch handle's task (without the `#v<order>` suffix) and order. */
export function handleOrder(handle: string): { readonly task: string; readonly order?: number } {
  const suffix = ORDER_SUFFIX.exec(handle);
  return suffix === null
    ? { task: handle }
    : { task: handle.slice(0, suffix.index), order: Number(suffix[1]) };
}

/**
 * Whether the run's end would need nothing but its record written: no cancel
 * request to honour, and no checkout, account hold or per-run secret to let
 * go of first (shared/app/credentials.ts endRun). Only such a run may be
 * advanced without reading it.
 */
export const advancesBlind = (run: Run): boolean =>
  !isTerminal(run.state) &&
  run.launch?.handle !== undefined &&
  run.cancelRequested !== true &&
  run.credentialLease === undefined &&
  run.heldAccount === undefined &&
  (run.ephemeralSecrets ?? []).length === 0;

/** Whether `advance` applies to the stored run; every store's advanceRun checks exactly this. */
export function advanceApplies(run: Run, advance: RunAdvance): boolean {
  if (!advancesBlind(run) || !advance.from.includes(run.state) || run.attempt !== advance.attempt)
    return false;
  const recorded = handleOrder(run.launch?.handle ?? '');
  return recorded.task === advance.task && (recorded.order === undefined || recorded.order < advance.order);
}

/**
 * The run an advance makes: moved to `to` with the reason and exit code, its
 * launch handle now at the advance's order. Every store's advanceRun writes
 * exactly this (DynamoDB replays it on read: dynamodb/run-advance.ts).
 *
 * @example
 * advancedRun(launchedRun, { attempt: 1, task: 'ecs:runs/arn…', order: 3, from: ['launched'], to: 'running', at });
 */
export function advancedRun(run: Run, advance: RunAdvance): Run {
  if (run.launch === undefined) throw new RangeError(`Run ${run.id} has no launch record to advance`);
  const launch = { ...run.launch, handle: `${advance.task}#v${advance.order}` };
  const exit = advance.exitCode === undefined ? {} : { exitCode: advance.exitCode };
  return transition(run, advance.to, advance.at, {
    ...(advance.reason === undefined ? {} : { reason: advance.reason }),
    patch: { launch, ...exit },
  });
}

/** Who claims a run for dispatch, and when. */
export interface RunClaim {
  readonly owner: string;
  readonly at: string;
}

/**
 * The run a claim makes of a queued run: `dispatching`, owned by
 * `claim.owner`, on the next attempt, with the launch intent for the runner
 * chosen at submit. Every store's `claimRun` writes exactly this.
 *
 * @example
 * claimedRun(queuedRun, { owner: 'dispatcher:1', at }); // { state: 'dispatching', attempt: 1, launch: { backend: 'ecs', intentAt: at }, … }
 */
export function claimedRun(run: Run, claim: RunClaim): Run {
  const next = transition(run, 'dispatching', claim.at, {
    patch: { owner: claim.owner, attempt: run.attempt + 1 },
  });
  return run.runner === undefined ? next : { ...next, launch: { backend: run.runner, intentAt: claim.at } };
}
