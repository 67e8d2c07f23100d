import { type Budget, takeFromBudget } from '../../domain/launch-budget.ts';
import type { BudgetTake, LaunchBudgetStore } from '../../ports/launch-budget.ts';

/**
 * Launch budgets for one process (local mode): the bucket states live in a
 * map. Takes are synchronous between awaits, so concurrent dispatches in the
 * process never over-spend.
 *
 * @example
 * const budgets = new InProcessLaunchBudgets();
 * await budgets.take('ecs#local', { perSecond: 20, burst: 100 }, Date.now()); // { granted: true }
 */
export class InProcessLaunchBudgets implements LaunchBudgetStore {
  readonly #tats = new Map<string, number>();

  async take(key: string, budget: Budget, nowMs: number): Promise<BudgetTake> {
    const decision = takeFromBudget(this.#tats.get(key), nowMs, budget);
    if (!decision.granted) return decision;
    this.#tats.set(key, decision.tat);
    return { granted: true };
  }
}
