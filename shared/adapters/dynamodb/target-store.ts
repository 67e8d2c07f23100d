import {
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { Target } from '../../domain/target.ts';
import type { TargetStore } from '../../ports/target-store.ts';
import { type Item, queryAll, runTableOf, S } from './items.ts';

const targetKey = (id: string): Item => ({ pk: S('TARGET'), sk: S(id) });

function targetOf(item: Item): Target {
  const target = JSON.parse(item.body?.S ?? 'null') as Target;
  const createdAt = item.createdAt?.S;
  return createdAt === undefined ? target : { ...target, createdAt };
}

export interface DynamoTargetStoreOptions {
  /** The runs table (shared/domain/run-table.ts): targets are its `TARGET` partition. */
  readonly tableName: string;
  /** Defaults to one client per process, configured from the environment (AWS_REGION, AWS_ENDPOINT_URL …). */
  readonly client?: DynamoDBClient;
}

/**
 * TargetStore over the runs table: every target is an item of the one
 * partition `TARGET`, sorted by id (sk), so listing them is a Query, not a
 * Scan (the registry is small, far below a partition's limits). `body` is the
 * target as JSON; `createdAt` is kept apart so a re-PUT keeps the first one.
 *
 * @example
 * const targets = new DynamoTargetStore({ tableName: process.env.RUNS_TABLE });
 * await targets.putTarget(target);
 * const found = await targets.getTarget('vm-1');
 */
export class DynamoTargetStore implements TargetStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(options: DynamoTargetStoreOptions) {
    ({ client: this.#client, table: this.#table } = runTableOf(options));
  }

  /** Upsert in one request; `if_not_exists` keeps the first `createdAt` so a re-PUT does not rewrite history. */
  async putTarget(target: Target): Promise<Target> {
    const { Attributes } = await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: targetKey(target.id),
        UpdateExpression: 'SET body = :body, createdAt = if_not_exists(createdAt, :createdAt)',
        ExpressionAttributeValues: { ':body': S(JSON.stringify(target)), ':createdAt': S(target.createdAt) },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Attributes === undefined ? target : targetOf(Attributes);
  }

  async getTarget(id: string): Promise<Target | undefined> {
    const { Item } = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: targetKey(id), ConsistentRead: true }),
    );
    return Item === undefined ? undefined : targetOf(Item);
  }

  async listTargets(): Promise<readonly Target[]> {
    const items = await queryAll(
      this.#client,
      {
        TableName: this.#table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': S('TARGET') },
        ConsistentRead: true,
      },
      Number.POSITIVE_INFINITY,
    );
    return items.map(targetOf);
  }

  async deleteTarget(id: string): Promise<boolean> {
    const { Attributes } = await this.#client.send(
      new DeleteItemCommand({ TableName: this.#table, Key: targetKey(id), ReturnValues: 'ALL_OLD' }),
    );
    return Attributes !== undefined;
  }
}
