import { type Budget, joinLine, takeFromBudget } from '../../domain/launch-budget.ts';
import type { BudgetTake, LaunchBudgetStore } from '../../ports/launch-budget.ts';

/**
 * Launch budgets for one process (local mode): the bucket states and waiting
 * lines live in maps. Takes are synchronous between awaits, so concurrent
 * dispatches in the process never over-spend.
 *
 * @example
 * const budgets = new InProcessLaunchBudgets();
 * await budgets.take('ecs#local', { perSecond: 20, burst: 100 }, Date.now()); // { granted: true }
 */
export class InProcessLaunchBudgets implements LaunchBudgetStore {
  readonly #tats = new Map<string, number>();
  readonly #lines = new Map<string, number>();

  async take(key: string, budget: Budget, nowMs: number): Promise<BudgetTake> {
    const tat = this.#tats.get(key);
    const decision = takeFromBudget(tat, nowMs, budget);
    if (decision.granted) {
      this.#tats.set(key, decision.tat);
      return { granted: true };
    }
    const queued = joinLine(this.#lines.get(key), tat ?? nowMs, nowMs, budget);
    this.#lines.set(key, queued.line);
    return { granted: false, retryAfterMs: queued.waitMs };
  }
}
