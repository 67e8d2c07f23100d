import type { Budget } from '../../domain/launch-budget.ts';
import { leaseWant, leasing } from '../../domain/launch-budget-lease.ts';
import type { BudgetTake, LaunchBudgetStore } from '../../ports/launch-budget.ts';

/** One write to the shared bucket: up to `want` tokens of `bucket`, or a refusal with when to come back. */
export type TakeUpTo = (
  key: string,
  bucket: Budget,
  want: number,
  nowMs: number,
) => Promise<{ readonly granted: number; readonly retryAfterMs?: number }>;

interface Lease {
  remaining: number;
  readonly expiresAt: number;
}

/**
 * A container's leases on shared budgets (shared/domain/launch-budget-lease.ts):
 * a take is served from this container's lease when it has an unexpired
 * token, else by one write for as many tokens as are waiting here or were
 * used in the last lease lifetime. Concurrent takes while a write is in
 * flight wait for it and share what it brought; a refusal is the write's own
 * (each refused run joins the waiting line by its write).
 *
 * @example
 * const takes = new LeasedTakes((key, bucket, want, now) => store.takeUpTo(key, bucket, want, now));
 * await takes.take('ecs#123456789012/eu-west-1', { perSecond: 20, burst: 100 }, Date.now());
 */
export class LeasedTakes implements LaunchBudgetStore {
  readonly #takeUpTo: TakeUpTo;
  readonly #leases = new Map<string, Lease>();
  readonly #inFlight = new Map<string, ReturnType<TakeUpTo>>();
  readonly #waiting = new Map<string, number>();
  /** When this container's recent takes per scope were served (for the next lease's size). */
  readonly #recent = new Map<string, number[]>();

  constructor(takeUpTo: TakeUpTo) {
    this.#takeUpTo = takeUpTo;
  }

  async take(key: string, budget: Budget, nowMs: number): Promise<BudgetTake> {
    const l = leasing(budget);
    // No leases for a small burst: one write per take, concurrent as before.
    if (l.size === 1) return answer(await this.#takeUpTo(key, budget, 1, nowMs));
    this.#waiting.set(key, (this.#waiting.get(key) ?? 0) + 1);
    try {
      // One lease write in flight per scope: wait for it, and take from what it brought.
      for (let pending = this.#inFlight.get(key); pending !== undefined; pending = this.#inFlight.get(key)) {
        if (this.#fromLease(key, nowMs, l.size)) return { granted: true };
        const got = await pending.catch(() => undefined);
        // The bucket was empty: this take will be refused too, and joins the waiting line by its own write.
        if (got?.granted === 0) return answer(await this.#takeUpTo(key, l.bucket, 1, nowMs));
      }
      if (this.#fromLease(key, nowMs, l.size)) return { granted: true };
      const write = this.#write(key, l, nowMs);
      this.#inFlight.set(key, write);
      let got: Awaited<ReturnType<TakeUpTo>>;
      try {
        got = await write;
      } finally {
        if (this.#inFlight.get(key) === write) this.#inFlight.delete(key);
      }
      if (got.granted === 0) return answer(got);
      // This take spends one token; the rest are the lease, for this container only.
      this.#leases.set(key, { remaining: got.granted - 1, expiresAt: nowMs + l.lifetimeMs });
      this.#noteTake(key, nowMs, l.size);
      return { granted: true };
    } finally {
      this.#waiting.set(key, (this.#waiting.get(key) ?? 1) - 1);
    }
  }

  /**
   * One write for this take and the ones expected within the lease's
   * lifetime: those waiting here (counted after one turn, so that takes
   * started together share it) or as many as came in the last lifetime.
   */
  async #write(key: string, l: ReturnType<typeof leasing>, nowMs: number): ReturnType<TakeUpTo> {
    await Promise.resolve();
    const recent = (this.#recent.get(key) ?? []).filter((t) => t > nowMs - l.lifetimeMs).length;
    const want = leaseWant(l, this.#waiting.get(key) ?? 1, recent + 1);
    return this.#takeUpTo(key, l.bucket, want, nowMs);
  }

  /** Spend one token of the lease if it has one left and has not expired. */
  #fromLease(key: string, nowMs: number, size: number): boolean {
    const lease = this.#leases.get(key);
    if (lease === undefined || lease.remaining <= 0 || nowMs > lease.expiresAt) return false;
    lease.remaining -= 1;
    this.#noteTake(key, nowMs, size);
    return true;
  }

  /** Remember when a take was served; the last `size` are all a lease's size can use. */
  #noteTake(key: string, nowMs: number, size: number): void {
    const times = this.#recent.get(key) ?? [];
    times.push(nowMs);
    if (times.length > size) times.splice(0, times.length - size);
    this.#recent.set(key, times);
  }
}

/** A write's answer as a take's: granted when it brought a token. */
const answer = (got: Awaited<ReturnType<TakeUpTo>>): BudgetTake =>
  got.granted > 0 ? { granted: true } : { granted: false, retryAfterMs: got.retryAfterMs ?? 0 };
