import {
  type AttributeValue,
  DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  type QueryCommandOutput,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { decodeSeqCursor, encodeSeqCursor } from '../../domain/cursor.ts';
import { ValidationError } from '../../domain/errors.ts';
import { limitError } from '../../domain/page-limit.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import type * as port from '../../ports/log-store.ts';
import { logPageSize } from '../../ports/log-store.ts';

/*
 * Items (string keys `pk` / `sk`, so the runs table can hold them beside the runs):
 *
 * | pk            | sk                        | other attributes                                   |
 * |---------------|---------------------------|----------------------------------------------------|
 * | `LOG#<runId>` | last seq, 15 digits, 0-padded | first (N), lines (S: JSON `[[at, stream, text]…]`), expiresAt (TTL) |
 * | `LOG#<runId>` | `#SEQ`                    | last (N): the highest seq handed out, expiresAt     |
 *
 * One item holds one appended batch (split to stay far below the 400 KB item
 * limit), so a relay shipping a batch every 200 ms costs one write per batch,
 * not one per line. Sorting by the LAST seq lets `read` ask for `sk > cursor`
 * and get exactly the chunks that hold a line after the cursor. Log items
 * carry none of the run index attributes, so they never appear in its GSIs.
 */

const DEFAULT_TTL_SECONDS = 30 * 24 * 60 * 60;
const MAX_LINES_PER_ITEM = 1000;
/** Stay well inside DynamoDB's 400 KB per item. */
const MAX_CHUNK_BYTES = 300 * 1024;
/** One line alone may not exceed the chunk budget: cut it (the shim already cuts at 64 KiB). */
const MAX_LINE_BYTES = 200 * 1024;
const SEQ_DIGITS = 15;
/** Sorts before every seq (`#` < `0`), so `sk > <cursor>` never returns it. */
const COUNTER_SK = '#SEQ';

const S = (value: string): AttributeValue => ({ S: value });
const N = (value: number): AttributeValue => ({ N: String(value) });
const pkOf = (runId: string) => `LOG#${runId}`;
const skOf = (seq: number) => String(seq).padStart(SEQ_DIGITS, '0');

type StoredLine = [at: string, stream: port.LogStream, text: string];

export interface DynamoLogStoreOptions {
  readonly tableName: string;
  /** Defaults to a client configured from the environment (AWS_REGION, AWS_ENDPOINT_URL …). */
  readonly client?: DynamoDBClient;
  readonly clock?: Clock;
  /** How long output is kept (DynamoDB TTL on `ttlAttribute`); default 30 days. */
  readonly ttlSeconds?: number;
  /** The table's TTL attribute; default `expiresAt`, as on the runs table. */
  readonly ttlAttribute?: string;
}

/**
 * LogStore over DynamoDB (design above): where the relay agent writes its
 * runs' redacted output in AWS mode, and what the API reads back for relay
 * runs. The table may be the runs table.
 *
 * An append first reserves its seq range with one atomic `ADD` on the run's
 * counter item, then writes its chunks: two writers for one run (a relay that
 * restarted and adopted the run while its old self still ships) never get the
 * same numbers, and in-process appends for a run are written in call order.
 * Two writes per batch; a crash between them leaves a gap in the numbers,
 * never a duplicate or a reordering.
 *
 * @example
 * const logs = new DynamoLogStore({ tableName: process.env.RUNS_TABLE! });
 * await logs.append(runId, [{ stream: 'stdout', text: 'PLAY [all]' }]);
 * const page = await logs.read(runId, { cursor });
 */
export class DynamoLogStore implements port.LogStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #clock: Clock;
  readonly #ttlSeconds: number;
  readonly #ttlAttribute: string;
  /** Appends of one run run one after another, in call order. */
  readonly #chains = new Map<string, Promise<void>>();

  constructor(options: DynamoLogStoreOptions) {
    if (options.tableName.length === 0) throw new ValidationError('tableName must not be empty');
    this.#client = options.client ?? new DynamoDBClient({});
    this.#table = options.tableName;
    this.#clock = options.clock ?? systemClock;
    this.#ttlSeconds = options.ttlSeconds ?? DEFAULT_TTL_SECONDS;
    this.#ttlAttribute = options.ttlAttribute ?? 'expiresAt';
  }

  append(runId: string, lines: readonly port.LogLineInput[]): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    const previous = this.#chains.get(runId) ?? Promise.resolve();
    const mine = previous.catch(() => {}).then(() => this.#appendNow(runId, lines));
    const tail = mine.catch(() => {});
    this.#chains.set(runId, tail);
    void tail.then(() => {
      if (this.#chains.get(runId) === tail) this.#chains.delete(runId);
    });
    return mine;
  }

  async read(runId: string, options: { cursor?: string; limit?: number } = {}): Promise<port.LogPage> {
    const wanted = logPageSize(options.limit);
    if (wanted === undefined) throw limitError();
    const after = options.cursor === undefined ? 0 : decodeSeqCursor(options.cursor);
    const lines: port.LogLine[] = [];
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page: QueryCommandOutput = await this.#client.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: 'pk = :pk AND sk > :after',
          ExpressionAttributeValues: { ':pk': S(pkOf(runId)), ':after': S(skOf(after)) },
          ConsistentRead: true,
          Limit: 50,
          ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
        }),
      );
      for (const item of page.Items ?? []) {
        let seq = Number(item.first?.N ?? '0');
        for (const [at, stream, text] of JSON.parse(item.lines?.S ?? '[]') as StoredLine[]) {
          if (seq > after && lines.length < wanted) lines.push({ seq, at, stream, text });
          seq += 1;
        }
        if (lines.length >= wanted) break;
      }
      startKey = lines.length >= wanted ? undefined : page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return { lines, nextCursor: encodeSeqCursor(lines.at(-1)?.seq ?? after) };
  }

  async #appendNow(runId: string, lines: readonly port.LogLineInput[]): Promise<void> {
    const now = this.#clock.now();
    const stored: StoredLine[] = lines.map((l) => [l.at ?? now, l.stream, clipLine(l.text)]);
    const expiresAt = N(Math.floor(this.#clock.nowMs() / 1000) + this.#ttlSeconds);
    // Reserve the seq range atomically: two writers of one run never get overlapping numbers.
    const { Attributes } = await this.#client.send(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: S(pkOf(runId)), sk: S(COUNTER_SK) },
        UpdateExpression: 'ADD #last :n SET #ttl = :ttl',
        ExpressionAttributeNames: { '#last': 'last', '#ttl': this.#ttlAttribute },
        ExpressionAttributeValues: { ':n': N(stored.length), ':ttl': expiresAt },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    let first = Number(Attributes?.last?.N ?? Number.NaN) - stored.length + 1;
    if (!Number.isSafeInteger(first) || first < 1) throw new Error(`Log counter of run ${runId} is corrupt`);
    for (const chunk of chunks(stored)) {
      const last = first + chunk.length - 1;
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: {
            pk: S(pkOf(runId)),
            sk: S(skOf(last)),
            first: N(first),
            lines: S(JSON.stringify(chunk)),
            [this.#ttlAttribute]: expiresAt,
          },
          // The range is ours alone; a retried PutItem after a lost answer writes the same item again.
          ConditionExpression: 'attribute_not_exists(pk) OR #first = :first',
          ExpressionAttributeNames: { '#first': 'first' },
          ExpressionAttributeValues: { ':first': N(first) },
        }),
      );
      first = last + 1;
    }
  }
}

function clipLine(text: string): string {
  if (Buffer.byteLength(text, 'utf8') <= MAX_LINE_BYTES) return text;
  return `${Buffer.from(text, 'utf8').subarray(0, MAX_LINE_BYTES).toString('utf8')}… [line cut]`;
}

function* chunks(lines: readonly StoredLine[]): Generator<StoredLine[]> {
  let chunk: StoredLine[] = [];
  let bytes = 2;
  for (const line of lines) {
    const size = Buffer.byteLength(JSON.stringify(line), 'utf8') + 1;
    if (chunk.length > 0 && (chunk.length >= MAX_LINES_PER_ITEM || bytes + size > MAX_CHUNK_BYTES)) {
      yield chunk;
      chunk = [];
      bytes = 2;
    }
    chunk.push(line);
    bytes += size;
  }
  if (chunk.length > 0) yield chunk;
}
