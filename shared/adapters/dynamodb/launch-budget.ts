import { type AttributeValue, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { type Budget, intervalMs, joinLine, toleranceMs } from '../../domain/launch-budget.ts';
import { takeManyFromBudget } from '../../domain/launch-budget-lease.ts';
import type { BudgetTake, LaunchBudgetStore } from '../../ports/launch-budget.ts';
import { type ConditionalUpdate, type Item, N, type RunTable, runTableOf, S, updateIf } from './items.ts';
import { LeasedTakes } from './launch-budget-lease.ts';

/** Conditional writes one take may make when other containers keep winning; then it waits an interval. */
const MAX_WRITES = 4;

const budgetKey = (key: string): Item => ({ pk: S(`BUDGET#${key}`), sk: S('BUDGET') });

/**
 * Launch budgets in the runs table, shared by every Lambda container: one item
 * per scope (`BUDGET#<backend>#<account/region>`) holding the bucket's
 * theoretical arrival time `tat` (shared/domain/launch-budget.ts).
 *
 * A container leases tokens (LeasedTakes, shared/domain/launch-budget-lease.ts):
 * one write takes up to a tenth of the burst when that many launches are
 * waiting in the container or were made there lately, and the tokens left
 * expire within one lease lifetime; the stored bucket runs with its burst
 * lowered by the lease size so the budget holds across containers all the
 * same. In a steady burst that is one write per lease, not per launch.
 *
 * A write is one conditional UpdateItem. Which of the two updates applies
 * depends on whether the bucket is full (`tat < now`: `SET tat = now + interval`)
 * or not (`tat + interval`, allowed while `tat ≤ now + tolerance`); the
 * container guesses from the `tat` it saw last, and a wrong guess comes back
 * with the item (ReturnValuesOnConditionCheckFailure) for one more write.
 * `tat` never moves backwards, so a stale one only errs towards "granted",
 * which the condition then checks; when the last `tat` seen already refuses,
 * no take is sent. A refused take joins the waiting line (`line`, one more
 * write) so that waiting runs come back one token apart.
 *
 * @example
 * const budgets = new DynamoLaunchBudgets({ client: new DynamoDBClient({}), tableName: 'runs' });
 * await budgets.take('ecs#123456789012/eu-west-1', { perSecond: 20, burst: 100 }, Date.now());
 */
export class DynamoLaunchBudgets implements LaunchBudgetStore {
  readonly #t: RunTable;
  /** The latest `tat` this container saw per scope. */
  readonly #seen = new Map<string, number>();
  /** The latest end of the waiting line this container saw per scope. */
  readonly #lines = new Map<string, number>();
  readonly #leases = new LeasedTakes((key, bucket, want, nowMs) => this.#takeUpTo(key, bucket, want, nowMs));

  constructor(options: { readonly tableName: string; readonly client?: RunTable['client'] }) {
    this.#t = runTableOf(options);
  }

  take(key: string, budget: Budget, nowMs: number): Promise<BudgetTake> {
    return this.#leases.take(key, budget, nowMs);
  }

  /** One lease: up to `want` tokens of the (lowered) bucket, or the run's place in the waiting line. */
  async #takeUpTo(
    key: string,
    budget: Budget,
    want: number,
    nowMs: number,
  ): Promise<{ readonly granted: number; readonly retryAfterMs?: number }> {
    let known = this.#seen.get(key);
    for (let write = 0; write < MAX_WRITES; write++) {
      const decision = takeManyFromBudget(known, nowMs, budget, want);
      if (!decision.ok) {
        const wait = await this.#wait(key, budget, nowMs, known ?? nowMs);
        return { granted: 0, retryAfterMs: wait.granted ? 0 : wait.retryAfterMs };
      }
      const take = decision.granted * intervalMs(budget);
      const full = known === undefined || known < nowMs;
      const got = full
        ? await this.#update(key, 'SET tat = :next', 'attribute_not_exists(tat) OR tat < :now', {
            ':now': N(nowMs),
            ':next': N(decision.tat),
          })
        : // Room for all of them: the last one's take must be allowed too.
          await this.#update(key, 'SET tat = tat + :take', 'tat >= :now AND tat <= :limit', {
            ':now': N(nowMs),
            ':limit': N(nowMs + toleranceMs(budget) - take + intervalMs(budget)),
            ':take': N(take),
          });
      if (got.updated) {
        this.#note(key, numberOf(got.item, 'tat') ?? decision.tat);
        return { granted: decision.granted };
      }
      known = numberOf(got.item, 'tat');
      if (known !== undefined) this.#note(key, known);
      const line = numberOf(got.item, 'line');
      if (line !== undefined) this.#lines.set(key, line);
    }
    return { granted: 0, retryAfterMs: intervalMs(budget) };
  }

  #note(key: string, tat: number): void {
    if (tat > (this.#seen.get(key) ?? Number.NEGATIVE_INFINITY)) this.#seen.set(key, tat);
  }

  /**
   * A refusal joins the scope's waiting line (`line`, shared/domain joinLine)
   * with one UpdateItem: an atomic `line + interval` while the line is ahead of
   * the bucket, or a restart at `tat + interval` once it has fallen behind.
   * Waiters never conflict with each other; only a wrong guess between the
   * two costs a second write. The answer's `line` gives this run its place.
   */
  async #wait(key: string, budget: Budget, nowMs: number, tat: number): Promise<BudgetTake> {
    let line = this.#lines.get(key);
    for (let write = 0; write < MAX_WRITES; write++) {
      const behind = line === undefined || line < tat;
      const got = behind
        ? await this.#update(key, 'SET line = :restart', 'attribute_not_exists(line) OR line < :tat', {
            ':tat': N(tat),
            ':restart': N(tat + intervalMs(budget)),
          })
        : await this.#update(key, 'SET line = line + :interval', 'line >= :tat', {
            ':tat': N(tat),
            ':interval': N(intervalMs(budget)),
          });
      if (got.updated) {
        const end = numberOf(got.item, 'line') ?? tat + intervalMs(budget);
        this.#lines.set(key, end);
        return {
          granted: false,
          retryAfterMs: joinLine(end - intervalMs(budget), tat, nowMs, budget).waitMs,
        };
      }
      line = numberOf(got.item, 'line');
      tat = Math.max(tat, numberOf(got.item, 'tat') ?? tat);
    }
    return { granted: false, retryAfterMs: joinLine(line, tat, nowMs, budget).waitMs };
  }

  /**
   * One conditional UpdateItem of the scope's item, answering the attributes it updated or, when the
   * condition failed, the item as found (read again when the failed write did not return it: an emulator).
   */
  async #update(
    key: string,
    update: string,
    condition: string,
    values: Record<string, AttributeValue>,
  ): Promise<ConditionalUpdate> {
    const got = await updateIf(this.#t, {
      Key: budgetKey(key),
      UpdateExpression: update,
      ConditionExpression: condition,
      ExpressionAttributeValues: values,
      ReturnValues: 'UPDATED_NEW',
    });
    return got.updated || got.item !== undefined ? got : { updated: false, item: await this.#read(key) };
  }

  /** The item when the failed write did not return it (an emulator). */
  async #read(key: string): Promise<Item | undefined> {
    const { Item } = await this.#t.client.send(
      new GetItemCommand({ TableName: this.#t.table, Key: budgetKey(key), ConsistentRead: true }),
    );
    return Item;
  }
}

function numberOf(item: Item | undefined, name: 'tat' | 'line'): number | undefined {
  const n = item?.[name]?.N;
  return n === undefined ? undefined : Number(n);
}
