import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { type Budget, intervalMs, takeFromBudget, toleranceMs } from '../../domain/launch-budget.ts';
import type { BudgetTake, LaunchBudgetStore } from '../../ports/launch-budget.ts';
import { errorName, type Item, N, type RunTable, runTableOf, S } from './items.ts';

/** Conditional writes one take may make when other containers keep winning; then it waits an interval. */
const MAX_WRITES = 4;

const budgetKey = (key: string): Item => ({ pk: S(`BUDGET#${key}`), sk: S('BUDGET') });

/**
 * Launch budgets in the runs table, shared by every Lambda container: one item
 * per scope (`BUDGET#<backend>#<account/region>`) holding the bucket's
 * theoretical arrival time `tat` (shared/domain/launch-budget.ts).
 *
 * A take is one conditional UpdateItem. Which of the two updates applies
 * depends on whether the bucket is full (`tat < now`: `SET tat = now + interval`)
 * or not (`tat + interval`, allowed while `tat ≤ now + tolerance`); the
 * container guesses from the `tat` it saw last, and a wrong guess comes back
 * with the item (ReturnValuesOnConditionCheckFailure) for one more write. A
 * refusal costs no write, and none at all when the last `tat` seen already
 * refuses: `tat` never moves backwards, so a stale one only errs towards
 * "granted", which the condition then checks.
 *
 * @example
 * const budgets = new DynamoLaunchBudgets({ client: new DynamoDBClient({}), tableName: 'runs' });
 * await budgets.take('ecs#123456789012/eu-west-1', { perSecond: 20, burst: 100 }, Date.now());
 */
export class DynamoLaunchBudgets implements LaunchBudgetStore {
  readonly #t: RunTable;
  /** The latest `tat` this container saw per scope. */
  readonly #seen = new Map<string, number>();

  constructor(options: { readonly tableName: string; readonly client?: RunTable['client'] }) {
    this.#t = runTableOf(options);
  }

  async take(key: string, budget: Budget, nowMs: number): Promise<BudgetTake> {
    let known = this.#seen.get(key);
    for (let write = 0; write < MAX_WRITES; write++) {
      const decision = takeFromBudget(known, nowMs, budget);
      if (!decision.granted) return decision;
      const full = known === undefined || known < nowMs;
      try {
        const { Attributes } = await this.#t.client.send(
          new UpdateItemCommand({
            TableName: this.#t.table,
            Key: budgetKey(key),
            ...(full
              ? {
                  UpdateExpression: 'SET tat = :next',
                  ConditionExpression: 'attribute_not_exists(tat) OR tat < :now',
                  ExpressionAttributeValues: { ':now': N(nowMs), ':next': N(decision.tat) },
                }
              : {
                  UpdateExpression: 'SET tat = tat + :interval',
                  ConditionExpression: 'tat >= :now AND tat <= :limit',
                  ExpressionAttributeValues: {
                    ':now': N(nowMs),
                    ':limit': N(nowMs + toleranceMs(budget)),
                    ':interval': N(intervalMs(budget)),
                  },
                }),
            ReturnValues: 'UPDATED_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        this.#note(key, tatOf(Attributes) ?? decision.tat);
        return { granted: true };
      } catch (error) {
        if (errorName(error) !== 'ConditionalCheckFailedException') throw error;
        known = tatOf((error as { Item?: Item }).Item) ?? (await this.#read(key));
        if (known !== undefined) this.#note(key, known);
      }
    }
    return { granted: false, retryAfterMs: intervalMs(budget) };
  }

  #note(key: string, tat: number): void {
    if (tat > (this.#seen.get(key) ?? Number.NEGATIVE_INFINITY)) this.#seen.set(key, tat);
  }

  /** The item when the failed write did not return it (an emulator). */
  async #read(key: string): Promise<number | undefined> {
    const { Item } = await this.#t.client.send(
      new GetItemCommand({ TableName: this.#t.table, Key: budgetKey(key), ConsistentRead: true }),
    );
    return tatOf(Item);
  }
}

function tatOf(item: Item | undefined): number | undefined {
  const n = item?.tat?.N;
  return n === undefined ? undefined : Number(n);
}
