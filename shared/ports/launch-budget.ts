import type { Budget } from '../domain/launch-budget.ts';
import type { Runner } from '../domain/run.ts';
import type { LaunchCapScope, LaunchSlotStore } from './launch-cap.ts';

export type { Budget } from '../domain/launch-budget.ts';

/**
 * A take that was refused: come back in `retryAfterMs`, when the token for this
 * place in the line of waiting runs will be there.
 */
export type BudgetTake =
  | { readonly granted: true }
  | { readonly granted: false; readonly retryAfterMs: number };

/**
 * Token buckets shared by everyone who launches on one backend scope (every
 * dispatcher Lambda container of a deployment, or the one local-mode
 * process). `key` names the scope: backend plus account/region, project/region
 * or cluster/namespace. A take never over-spends under concurrency.
 *
 * @example
 * const take = await budgets.take('ecs#123456789012/eu-west-1', { perSecond: 20, burst: 100 }, clock.nowMs());
 * if (!take.granted) await queue.send(body, { delaySeconds: Math.ceil(take.retryAfterMs / 1000) });
 */
export interface LaunchBudgetStore {
  take(key: string, budget: Budget, nowMs: number): Promise<BudgetTake>;
}

/** One backend's bucket: its scope key (`ecs#<account>/<region>`) and its rate. */
export interface LaunchBudgetScope {
  readonly key: string;
  readonly budget: Budget;
}

/**
 * The launch budgets and caps a mode enforces: where the buckets and slots
 * live, and which backends have one.
 */
export interface LaunchGate {
  readonly store: LaunchBudgetStore;
  readonly scopes: Readonly<Partial<Record<Runner, LaunchBudgetScope>>>;
  /** Where the slots of the capped backends live; absent, no backend is capped. */
  readonly slots?: LaunchSlotStore;
  /** The backends with a cap on what runs at once (Cloud Run executions, Kubernetes pods). */
  readonly caps?: Readonly<Partial<Record<Runner, LaunchCapScope>>>;
  /** How long a run beyond a cap waits before it asks for a slot again (seconds, default 10). */
  readonly capWaitSeconds?: number;
  /** Spreads waiting runs over the refill time so they do not all come back at once; default Math.random. */
  readonly random?: () => number;
}
