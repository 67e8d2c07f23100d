import {
  type AttributeValue,
  DynamoDBClient,
  QueryCommand,
  type QueryCommandInput,
} from '@aws-sdk/client-dynamodb';

/** One DynamoDB item in the low-level client's shape. */
export type Item = Record<string, AttributeValue>;

export const S = (value: string): AttributeValue => ({ S: value });
export const N = (value: number): AttributeValue => ({ N: String(value) });

/** The SDK's error name, for errors from any copy of the SDK package. */
export const errorName = (error: unknown): string | undefined =>
  error instanceof Error ? error.name : undefined;

let sharedClient: DynamoDBClient | undefined;
/** One client per cold start, shared by every store built without an injected client. */
export const defaultClient = (): DynamoDBClient => {
  sharedClient ??= new DynamoDBClient({});
  return sharedClient;
};

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
