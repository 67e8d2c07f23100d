import { type Budget, intervalMs, toleranceMs } from './launch-budget.ts';

/**
 * Budget leases: a dispatcher container takes up to `size` tokens from the
 * shared bucket with one conditional write and spends them locally, so a
 * launch costs a fraction of a store write. Leased tokens expire `lifetimeMs`
 * after the write, so no container hoards them.
 *
 * Why the budget still holds: tokens used up to `lifetimeMs` after their
 * write could make a window hold more launches than the bucket allows, so the
 * shared bucket runs with its burst lowered by `size` (= `lifetimeMs` worth of
 * refill). Launches in any window [a, b] then come from writes in
 * [a − lifetime, b], which the lowered bucket grants at most
 * `(burst − size) + rate·(b − a + lifetime) = burst + rate·(b − a)` tokens:
 * exactly the arrival bound of the real bucket. The sustained rate is
 * unchanged. A budget whose burst is under 20 gets no leases (size 1,
 * lifetime 0): one write per launch, as before.
 *
 * @example
 * leasing({ perSecond: 20, burst: 100 }); // { size: 10, lifetimeMs: 500, bucket: { perSecond: 20, burst: 90 } }
 */
export interface Leasing {
  /** The most tokens one write may take. */
  readonly size: number;
  /** How long leased tokens stay usable after their write. */
  readonly lifetimeMs: number;
  /** The bucket the shared store keeps: the budget with its burst lowered by `size`. */
  readonly bucket: Budget;
}

/** Leases are at most a tenth of the burst. */
const LEASE_FRACTION = 10;

export function leasing(b: Budget): Leasing {
  const size = Math.floor(b.burst / LEASE_FRACTION);
  if (size < 2) return { size: 1, lifetimeMs: 0, bucket: b };
  return {
    size,
    lifetimeMs: size * intervalMs(b),
    bucket: { perSecond: b.perSecond, burst: b.burst - size },
  };
}

export type ManyDecision =
  | { readonly ok: true; readonly granted: number; readonly tat: number }
  | { readonly ok: false; readonly retryAfterMs: number };

/**
 * Take up to `want` tokens at once at `nowMs` (the GCRA of
 * shared/domain/launch-budget.ts, as `want` takes at the same instant): as
 * many as the bucket holds, at least one, or none with when the next is due.
 */
export function takeManyFromBudget(
  tat: number | undefined,
  nowMs: number,
  b: Budget,
  want: number,
): ManyDecision {
  const base = tat === undefined ? nowMs : Math.max(tat, nowMs);
  const ahead = base - nowMs - toleranceMs(b);
  if (ahead > 0) return { ok: false, retryAfterMs: ahead };
  // A tiny epsilon: intervals such as 1000/3 ms are not exact in binary.
  const room = Math.floor((toleranceMs(b) - (base - nowMs)) / intervalMs(b) + 1e-9) + 1;
  const granted = Math.max(1, Math.min(want, room));
  return { ok: true, granted, tat: base + granted * intervalMs(b) };
}

/**
 * How many tokens the next write asks for: what is waiting now, or what this
 * container used in the last lease lifetime (its recent demand), whichever is
 * more, up to the lease size. A container with one launch now and then asks
 * for one.
 */
export const leaseWant = (l: Leasing, waiting: number, recentTakes: number): number =>
  Math.max(1, Math.min(l.size, Math.max(waiting, recentTakes)));
