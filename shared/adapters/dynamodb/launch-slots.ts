import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { LaunchSlotStore } from '../../ports/launch-cap.ts';
import { errorName, type Item, N, type RunTable, runTableOf, S } from './items.ts';

const slotsKey = (scope: string): Item => ({ pk: S(`SLOTS#${scope}`), sk: S('SLOTS') });

/**
 * Launch-cap slots in the runs table, shared by every Lambda container: one
 * item per scope (`SLOTS#gcp#<project>/<region>`) whose string set `slots`
 * holds the ids of the runs holding one. Acquire is one conditional
 * UpdateItem (`ADD slots :id` while the set is smaller than the cap or
 * already holds the id, so a redelivery takes nothing more); release is one
 * unconditional `DELETE slots :id`. No read on either path.
 *
 * Cost: a write is billed by the item's size (1 KB per write unit), so a
 * scope holding 1000 run ids (~27 KB) costs ~27 WCU per acquire or release;
 * at the Cloud Run launch budget's 1 per second that is well within one
 * partition's 1000 WCU/s.
 *
 * @example
 * const slots = new DynamoLaunchSlots({ client: new DynamoDBClient({}), tableName: 'runs' });
 * await slots.acquire('gcp#proj/europe-west1', 1000, run.id);
 */
export class DynamoLaunchSlots implements LaunchSlotStore {
  readonly #t: RunTable;

  constructor(options: { readonly tableName: string; readonly client?: RunTable['client'] }) {
    this.#t = runTableOf(options);
  }

  async acquire(scope: string, cap: number, runId: string): Promise<boolean> {
    try {
      await this.#t.client.send(
        new UpdateItemCommand({
          TableName: this.#t.table,
          Key: slotsKey(scope),
          UpdateExpression: 'ADD slots :id',
          ConditionExpression: 'attribute_not_exists(slots) OR size(slots) < :cap OR contains(slots, :run)',
          ExpressionAttributeValues: { ':id': { SS: [runId] }, ':run': S(runId), ':cap': N(cap) },
        }),
      );
      return true;
    } catch (error) {
      if (errorName(error) === 'ConditionalCheckFailedException') return false;
      throw error;
    }
  }

  async release(scope: string, runId: string): Promise<void> {
    await this.#t.client.send(
      new UpdateItemCommand({
        TableName: this.#t.table,
        Key: slotsKey(scope),
        UpdateExpression: 'DELETE slots :id',
        ExpressionAttributeValues: { ':id': { SS: [runId] } },
      }),
    );
  }

  async holders(scope: string): Promise<readonly string[]> {
    const { Item } = await this.#t.client.send(
      new GetItemCommand({ TableName: this.#t.table, Key: slotsKey(scope), ConsistentRead: true }),
    );
    return [...(Item?.slots?.SS ?? [])].sort();
  }
}
