import { isCapWaitReason } from './launch-cap.ts';

/**
 * Launch budgets: how fast a backend may be asked to start tasks, as a token
 * bucket of `burst` tokens refilled at `perSecond` (ECS's own throttle is one:
 * "the bucket maximum capacity signifies the burst rate and the bucket refill
 * rate is the sustained rate").
 *
 * The bucket is kept as one number, its theoretical arrival time (`tat`, the
 * generic cell rate algorithm): the instant the bucket would be full again.
 * A take is allowed when `tat - now ≤ tolerance`, and moves `tat` to
 * `max(tat, now) + interval`. That is the token bucket exactly (tokens =
 * `burst - (max(tat, now) - now) / interval`), but with no refill to compute:
 * one stored number, so a store can take with one conditional write.
 *
 * @example
 * const ecs = { perSecond: 20, burst: 100 };
 * let tat: number | undefined;
 * const d = takeFromBudget(tat, Date.now(), ecs); // { granted: true, tat: now + 50 }
 */
export interface Budget {
  /** Sustained rate: tokens added per second. */
  readonly perSecond: number;
  /** Bucket size: launches allowed at once from a full bucket. */
  readonly burst: number;
}

export type BudgetDecision =
  | { readonly granted: true; readonly tat: number }
  | { readonly granted: false; readonly retryAfterMs: number };

/** Milliseconds one token stands for. */
export const intervalMs = (b: Budget): number => 1000 / b.perSecond;

/** How far ahead of now `tat` may be before a take: burst − 1 intervals. */
export const toleranceMs = (b: Budget): number => (b.burst - 1) * intervalMs(b);

/** Take one token at `nowMs` from a bucket whose state is `tat` (undefined: never used, full). */
export function takeFromBudget(tat: number | undefined, nowMs: number, b: Budget): BudgetDecision {
  const base = tat === undefined ? nowMs : Math.max(tat, nowMs);
  const ahead = base - nowMs - toleranceMs(b);
  if (ahead > 0) return { granted: false, retryAfterMs: ahead };
  return { granted: true, tat: base + intervalMs(b) };
}

/**
 * A refused take joins the line of runs waiting for this bucket: `line` is
 * the bucket's `tat` once every run already waiting has had its token. The
 * newcomer's token comes `waitMs` from now, one interval after the last
 * waiter's, so a burst of waiters comes back spread at the budget's rate
 * instead of all at once. Waiting takes no token: a run that comes back takes
 * as any run does (and, when someone took its token first, joins again).
 */
export function joinLine(
  line: number | undefined,
  tat: number,
  nowMs: number,
  b: Budget,
): { readonly line: number; readonly waitMs: number } {
  const end = Math.max(line ?? tat, tat);
  return { line: end + intervalMs(b), waitMs: Math.max(0, end - toleranceMs(b) - nowMs) };
}

/** Tokens in the bucket at `nowMs` (for logs and tests). */
export function tokensAt(tat: number | undefined, nowMs: number, b: Budget): number {
  if (tat === undefined) return b.burst;
  return Math.max(0, b.burst - (Math.max(tat, nowMs) - nowMs) / intervalMs(b));
}

/** `ecs` → "ECS": how the waiting reason names a backend. */
const BACKEND_NAMES: Readonly<Record<string, string>> = {
  ecs: 'ECS',
  aci: 'ACI',
  gcp: 'Cloud Run',
  kubernetes: 'Kubernetes',
  local: 'relay',
};

/** The reason a run shows while it waits for its backend's budget: `waiting: ECS launch budget`. */
export const budgetWaitReason = (backend: string): string =>
  `waiting: ${BACKEND_NAMES[backend] ?? backend} launch budget`;

/**
 * A run's reason says it is waiting for a launch budget or a launch cap's slot
 * (so it is not a failure reason, and its next state drops it).
 */
export const isBudgetWaitReason = (reason: string | undefined): boolean =>
  (reason?.startsWith('waiting: ') === true && reason.endsWith(' launch budget')) || isCapWaitReason(reason);

/** Error names clouds use for "slow down" (AWS SDKs, ARM, Google, Kubernetes Status reasons). */
const THROTTLING_NAMES = new Set([
  'ThrottlingException',
  'Throttling',
  'ThrottledException',
  'TooManyRequestsException',
  'TooManyRequests',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  // ECS: an account or cluster quota on running tasks; capacity frees up as tasks end.
  'LimitExceededException',
  // gRPC status name (Google Cloud client libraries).
  'RESOURCE_EXHAUSTED',
  // A Kubernetes ResourceQuota refused a pod (403 "exceeded quota"; shared/adapters/kubernetes/errors.ts).
  'ExceededQuota',
]);

/** gRPC code 8 (RESOURCE_EXHAUSTED) is how google-gax reports a quota hit. */
const GRPC_RESOURCE_EXHAUSTED = 8;

interface ErrorLike {
  readonly name?: unknown;
  readonly code?: unknown;
  readonly reason?: unknown;
  readonly statusCode?: unknown;
  readonly status?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: unknown };
  readonly cause?: unknown;
}

/**
 * Whether a launch failed because the backend throttled it (HTTP 429, an SDK
 * throttling error, gRPC RESOURCE_EXHAUSTED), looking through `cause`s: the
 * launchers wrap SDK errors in domain errors. A throttled call started
 * nothing, so the run may simply wait and try again.
 */
export function isThrottling(error: unknown): boolean {
  for (let e = error, depth = 0; typeof e === 'object' && e !== null && depth < 5; depth++) {
    const x = e as ErrorLike;
    for (const name of [x.name, x.code, x.reason]) {
      if (typeof name === 'string' && THROTTLING_NAMES.has(name)) return true;
    }
    if (x.code === GRPC_RESOURCE_EXHAUSTED) return true;
    for (const status of [x.statusCode, x.status, x.$metadata?.httpStatusCode, x.code]) {
      if (status === 429 || status === '429') return true;
    }
    e = x.cause;
  }
  return false;
}
