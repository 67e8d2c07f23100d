import type { AttributeValue, QueryCommandInput, UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { DynamoDBClient, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { ValidationError } from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import { LIST_VALUE } from '../../domain/run-table.ts';
import { once } from '../../lib/once.ts';
import { advanceAttributes, withAdvances } from './advance-overlay.ts';
import { withClaim } from './claim-overlay.ts';
import { withRelayClaim } from './relay-claim-item.ts';

/** A run is one item; DynamoDB refuses items over 400 KB. */
const MAX_ITEM_BYTES = 400 * 1024;

/** One DynamoDB item in the low-level client's shape. */
export type Item = Record<string, AttributeValue>;

export const S = (value: string): AttributeValue => ({ S: value });
export const N = (value: number): AttributeValue => ({ N: String(value) });

/** The SDK's error name, for errors from any copy of the SDK package. */
export const errorName = (error: unknown): string | undefined =>
  error instanceof Error ? error.name : undefined;

/** The runs table a store works on, and the client it sends with. */
export interface RunTable {
  readonly client: DynamoDBClient;
  readonly table: string;
}

/** The table and client of a store's options: the client defaults to {@link defaultClient}. */
export function runTableOf(options: {
  readonly tableName: string;
  readonly client?: DynamoDBClient;
}): RunTable {
  if (options.tableName.length === 0) throw new ValidationError('tableName must not be empty');
  return { client: options.client ?? defaultClient(), table: options.tableName };
}

/** One client per cold start, shared by every store built without an injected client. */
export const defaultClient = once((): DynamoDBClient => new DynamoDBClient({}));

/** Follow LastEvaluatedKey until `want` items are in hand or the query is exhausted. */
export async function queryAll(
  client: DynamoDBClient,
  input: QueryCommandInput,
  want: number,
): Promise<Item[]> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await client.send(
      new QueryCommand(start === undefined ? input : { ...input, ExclusiveStartKey: start }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start !== undefined && items.length < want);
  return items;
}

/** What a conditional UpdateItem answered: the item as written, or as found when the condition failed. */
export type ConditionalUpdate =
  | { readonly updated: true; readonly item: Item }
  /** `item` is undefined when there was no item, or the emulator did not return it. */
  | { readonly updated: false; readonly item: Item | undefined };

/**
 * One conditional UpdateItem on the table that answers the item either way, with no second call: as
 * written (`ReturnValues`, ALL_NEW unless the input says otherwise) or, when the condition failed, as
 * found (ReturnValuesOnConditionCheckFailure ALL_OLD). Any other error is thrown as it came.
 *
 * @example
 * const got = await updateIf(table, { Key: runKey(id), UpdateExpression: 'SET #s = :to', ConditionExpression: '#s = :from', … });
 * if (!got.updated) decideFrom(got.item);
 */
export async function updateIf(
  t: RunTable,
  input: Omit<UpdateItemCommandInput, 'TableName' | 'ReturnValuesOnConditionCheckFailure'>,
): Promise<ConditionalUpdate> {
  try {
    const { Attributes } = await t.client.send(
      new UpdateItemCommand({
        TableName: t.table,
        ReturnValues: 'ALL_NEW',
        ...input,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { updated: true, item: Attributes ?? {} };
  } catch (error) {
    if (errorName(error) !== 'ConditionalCheckFailedException') throw error;
    return { updated: false, item: (error as { Item?: Item }).Item };
  }
}

export const runKey = (id: string): Item => ({ pk: S(`RUN#${id}`), sk: S('RUN') });
export const idempotencyKeyOf = (key: string): Item => ({
  pk: S(`IDEMPOTENCY#${key}`),
  sk: S('IDEMPOTENCY'),
});
export const accountKey = (account: string): Item => ({ pk: S(`ACCOUNT#${account}`), sk: S('ACCOUNT') });

export function runItem(run: Run): Item {
  const body = JSON.stringify(run);
  if (Buffer.byteLength(body, 'utf8') > MAX_ITEM_BYTES - 2048) {
    throw new ValidationError(`Run ${run.id} is too large to store (DynamoDB items hold at most 400 KB)`);
  }
  return {
    ...runKey(run.id),
    id: S(run.id),
    list: S(LIST_VALUE),
    state: S(run.state),
    version: N(run.version),
    createdAt: S(run.createdAt),
    ...(run.batchId === undefined ? {} : { batchId: S(run.batchId) }),
    ...advanceAttributes(run),
    body: S(body),
  };
}

/**
 * The run an item stands for: its body with a pending dispatch claim applied (claim-overlay.ts), the
 * advances written since replayed (advance-overlay.ts), then a relay claim written since laid over that
 * (relay-claim-item.ts).
 */
export const runOf = (item: Item): Run =>
  withRelayClaim(withAdvances(withClaim(JSON.parse(item.body?.S ?? 'null') as Run, item), item), item);

interface CancellationReasonLike {
  readonly Code?: string | undefined;
  readonly Item?: Item | undefined;
}

export function cancellationReasons(error: unknown): readonly CancellationReasonLike[] | undefined {
  if (errorName(error) !== 'TransactionCanceledException') return undefined;
  return (error as { CancellationReasons?: CancellationReasonLike[] }).CancellationReasons ?? [];
}
