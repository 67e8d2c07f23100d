import { isTerminal, RUN_STATES, type Run, type RunKind, type RunState } from './run.ts';
import { selectionProblem } from './selection.ts';
import { type Target, untargetableReason } from './target.ts';

/**
 * Batches: one asset, one kind, 1–50 targets, each target its own run sharing
 * a batch id. The rules here are pure; shared/app/batches.ts applies them.
 *
 * Selection problems (too many targets, duplicates, unknown ids, mixed kinds,
 * a target that does not fit the run kind, an untargetable row) refuse the
 * whole request before any run exists. Runner refusals depend on settings and
 * on each target's cloud, so they are per target: those targets are recorded
 * as `refused` runs of the batch while the rest run.
 */

/** Each target is a job: an unbounded "select all" would fan out unbounded work. */
export const MAX_BATCH_TARGETS = 50;

/** States a retry re-submits: everything terminal except success. */
export const RETRYABLE_STATES = [
  'failed',
  'refused',
  'timed_out',
  'cancelled',
] as const satisfies readonly RunState[];
const isRetryable = (state: RunState): boolean => (RETRYABLE_STATES as readonly RunState[]).includes(state);

/** One offending entry of `targetIds`. */
export interface TargetProblem {
  /** Position in the request's `targetIds`. */
  readonly index: number;
  readonly targetId: string;
  readonly reason: string;
}

export type BatchSelection =
  | { readonly ok: true; readonly targets: readonly Target[] }
  | {
      readonly ok: false;
      /** One sentence for the whole request. */
      readonly summary: string;
      /** Every offending target (empty when the request is refused as a whole, e.g. too many targets). */
      readonly problems: readonly TargetProblem[];
    };

/** Why this many targets cannot be one batch, or undefined. */
export function batchSizeProblem(count: number): string | undefined {
  if (count < 1) return 'A batch needs at least one target';
  if (count > MAX_BATCH_TARGETS) {
    return `A batch takes at most ${MAX_BATCH_TARGETS} targets; this one has ${count}. Split it into several batches`;
  }
  return undefined;
}

/** Every repeat of an id after its first occurrence. */
export function duplicateTargets(targetIds: readonly string[]): TargetProblem[] {
  const first = new Map<string, number>();
  const problems: TargetProblem[] = [];
  targetIds.forEach((targetId, index) => {
    const seen = first.get(targetId);
    if (seen === undefined) first.set(targetId, index);
    else problems.push({ index, targetId, reason: `${targetId} is already selected (targetIds[${seen}])` });
  });
  return problems;
}

/**
 * Check a whole selection against the registry. `registry` holds the rows
 * found for the requested ids; an id missing from it is unknown. Returns the
 * targets in request order, or every problem at once so a client can fix the
 * selection in one go.
 *
 * @example
 * const check = checkBatchSelection('vm', ['vm-1', 'desk-1'], new Map([...]));
 * // { ok: false, summary: '1 of 2 targets cannot be selected for a vm run', problems: [{ index: 1, … }] }
 */
export function checkBatchSelection(
  kind: RunKind,
  targetIds: readonly string[],
  registry: ReadonlyMap<string, Target>,
): BatchSelection {
  const size = batchSizeProblem(targetIds.length);
  if (size !== undefined) return { ok: false, summary: size, problems: [] };
  if (kind === 'portainer') {
    return {
      ok: false,
      summary:
        'A portainer run acts on the one configured Portainer connection and takes no target: it cannot be batched',
      problems: targetIds.map((targetId, index) => ({
        index,
        targetId,
        reason: 'Portainer runs take no targetId',
      })),
    };
  }

  const problems = duplicateTargets(targetIds);
  const repeated = new Set(problems.map((p) => p.index));
  const targets: Target[] = [];
  targetIds.forEach((targetId, index) => {
    if (repeated.has(index)) return;
    const target = registry.get(targetId);
    // A row that can never be a target says why, whatever kind of run asked for it.
    const problem = (target && untargetableReason(target)) ?? selectionProblem(kind, target, targetId);
    if (problem !== undefined) problems.push({ index, targetId, reason: problem });
    else if (target !== undefined) targets.push(target);
  });
  if (problems.length === 0) return { ok: true, targets };

  problems.sort((a, b) => a.index - b.index);
  const targetable = targetIds.flatMap((id) => {
    const target = registry.get(id);
    return target === undefined || untargetableReason(target) !== undefined ? [] : [target.kind];
  });
  const kinds = [...new Set(targetable)];
  const summary =
    kinds.length > 1
      ? `The selection mixes ${kinds.map((k) => k.replace('_', ' ')).join(' and ')} targets: one kind per batch`
      : `${new Set(problems.map((p) => p.targetId)).size} of ${new Set(targetIds).size} targets cannot be selected for a ${kind} run`;
  return { ok: false, summary, problems };
}

/** A run of the batch as the rollup names it. */
export interface BatchMember {
  readonly runId: string;
  readonly targetId?: string;
  readonly state: RunState;
  readonly reason?: string;
}

export interface BatchRollup {
  readonly batchId: string;
  readonly kind: RunKind;
  readonly asset: string;
  readonly requestedBy: string;
  readonly createdAt: string;
  /** The batch this one retried, when it was made by `POST /batches/{id}/retry`. */
  readonly retryOf?: string;
  readonly total: number;
  /** Runs per state; every state is present, zero or not. */
  readonly counts: Readonly<Record<RunState, number>>;
  /** Every run has reached a terminal state. */
  readonly complete: boolean;
  /** Runs that ended failed, refused, timed_out or cancelled: what a retry re-submits. */
  readonly failed: readonly BatchMember[];
  /** Every run, oldest first. */
  readonly runs: readonly BatchMember[];
}

const byId = (a: Run, b: Run) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

const member = (run: Run): BatchMember => ({
  runId: run.id,
  ...(run.targetId === undefined ? {} : { targetId: run.targetId }),
  state: run.state,
  ...(run.reason === undefined ? {} : { reason: run.reason }),
});

/**
 * Roll a batch's runs up: counts per state, completeness, failures by name.
 * Computed from the runs alone, so no batch record has to be kept in step.
 * `runs` must be non-empty and share `batchId`.
 */
export function rollupBatch(batchId: string, runs: readonly Run[]): BatchRollup {
  const sorted = [...runs].sort(byId);
  const first = sorted[0];
  if (first === undefined) throw new RangeError(`Batch ${batchId} has no runs to roll up`);
  const counts = Object.fromEntries(RUN_STATES.map((s) => [s, 0])) as Record<RunState, number>;
  for (const run of sorted) counts[run.state] += 1;
  return {
    batchId,
    kind: first.kind,
    asset: first.asset,
    requestedBy: first.requestedBy,
    // One request writes every run of a batch with the same timestamp.
    createdAt: first.createdAt,
    ...(first.retryOfBatch === undefined ? {} : { retryOf: first.retryOfBatch }),
    total: sorted.length,
    counts,
    complete: sorted.every((r) => isTerminal(r.state)),
    failed: sorted.filter((r) => isRetryable(r.state)).map(member),
    runs: sorted.map(member),
  };
}

/** The request a batch was made from, recovered from its runs (they all carry it). */
export interface BatchRequest {
  readonly kind: RunKind;
  readonly asset: string;
  readonly extraVars: Readonly<Record<string, unknown>>;
  readonly secrets: Run['secrets'];
  readonly operation?: Run['operation'];
  readonly sshUser?: string;
  readonly managedAccount?: string;
  readonly timeoutSeconds: number;
}

export interface RetryPlan {
  readonly request: BatchRequest;
  /** Targets whose run ended failed, refused, timed_out or cancelled, in the original order. */
  readonly targetIds: readonly string[];
}

/**
 * What `retry` re-submits: the original request, for the targets that did not
 * succeed. Runs still in flight are left alone (neither retried nor waited
 * for). Undefined when there is nothing to retry.
 */
export function planRetry(runs: readonly Run[]): RetryPlan | undefined {
  const sorted = [...runs].sort(byId);
  const first = sorted[0];
  if (first === undefined) return undefined;
  const targetIds = sorted.flatMap((r) =>
    isRetryable(r.state) && r.targetId !== undefined ? [r.targetId] : [],
  );
  if (targetIds.length === 0) return undefined;
  const request: BatchRequest = {
    kind: first.kind,
    asset: first.asset,
    extraVars: first.extraVars,
    secrets: first.secrets,
    ...(first.operation === undefined ? {} : { operation: first.operation }),
    ...(first.sshUser === undefined ? {} : { sshUser: first.sshUser }),
    ...(first.managedAccount === undefined ? {} : { managedAccount: first.managedAccount }),
    timeoutSeconds: first.timeoutSeconds,
  };
  return { request, targetIds: [...new Set(targetIds)] };
}
