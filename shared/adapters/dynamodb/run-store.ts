import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  type TransactWriteItem,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { decodeIdCursor, encodeIdCursor } from '../../domain/cursor.ts';
import {
  IdempotencyMismatchError,
  NotFoundError,
  RunConflictError,
  ValidationError,
} from '../../domain/errors.ts';
import { RUN_STATES, type Run, type RunState, TERMINAL_STATES } from '../../domain/run.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import type { CreateRunOptions, RunPage, RunQuery, RunStore } from '../../ports/run-store.ts';
import { defaultClient, errorName, type Item, N, queryAll, S } from './items.ts';

/*
 * Table design (one table, string keys `pk` / `sk`):
 *
 * | item               | pk                    | sk            | other attributes                                   |
 * |--------------------|-----------------------|---------------|----------------------------------------------------|
 * | run                | `RUN#<id>`            | `RUN`         | id, state, version, createdAt, batchId?, list, body |
 * | idempotency record | `IDEMPOTENCY#<key>`   | `IDEMPOTENCY` | fingerprint, runId, expiresAt (TTL, epoch seconds) |
 * | account hold       | `ACCOUNT#<account>`   | `ACCOUNT`     | runId, since (the run holding a managed account)   |
 * | target             | `TARGET`              | `<id>`        | createdAt, body                                    |
 *
 * `body` is the run (or target) as JSON, so the domain model round-trips
 * exactly (no number or empty-map surprises) and can grow without a
 * migration; the other attributes are copies the keys, indexes and conditions
 * need. Runs spread over partitions by id. Targets share one partition, so a
 * Query lists them sorted by id without a Scan: the registry is small
 * (thousands of rows), far below a partition's limits.
 *
 * Global secondary indexes, all sorted by the run id (a ULID, so by creation
 * time) and projecting ALL attributes so a page is one Query:
 * - `runs-by-id`: partition `list` (always `run`) — every run, newest first.
 *   One partition takes every run write; its ~1,000 writes/s ceiling is far
 *   above a control plane's rate.
 * - `runs-by-state`: partition `state` — the state filter and the
 *   reconciler's non-terminal runs.
 * - `runs-by-batch`: partition `batchId` — sparse, batch runs only.
 * Index reads are eventually consistent (usually well under a second behind);
 * `getRun` is strongly consistent.
 */

const TERMINAL: readonly string[] = TERMINAL_STATES;
const ACTIVE_STATES: readonly RunState[] = RUN_STATES.filter((s) => !TERMINAL.includes(s));

const MAX_PAGE = 100;
const DEFAULT_IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;
/** TransactWriteItems takes at most 100 actions and 4 MB; leave room for request overhead. */
const MAX_TRANSACTION_ITEMS = 100;
const MAX_TRANSACTION_BYTES = 3_500_000;
/** A run is one item; DynamoDB refuses items over 400 KB. */
const MAX_ITEM_BYTES = 400 * 1024;
const TRANSACTION_CONFLICT_RETRIES = 5;

const INDEX = {
  byId: 'runs-by-id',
  byState: 'runs-by-state',
  byBatch: 'runs-by-batch',
} as const;
const LIST_VALUE = 'run';
const TTL_ATTRIBUTE = 'expiresAt';

interface KeyElement {
  readonly AttributeName: string;
  readonly KeyType: 'HASH' | 'RANGE';
}

interface IndexDefinition {
  readonly IndexName: string;
  readonly KeySchema: KeyElement[];
  readonly Projection: {
    readonly ProjectionType: 'ALL' | 'KEYS_ONLY' | 'INCLUDE';
    NonKeyAttributes?: string[];
  };
}

/**
 * Key schema, attributes, indexes and TTL attribute of the runs table, in
 * CreateTable's shape (with every field present, so the CDK side needs no
 * undefined checks).
 */
export interface RunTableDefinition {
  readonly keySchema: KeyElement[];
  readonly attributeDefinitions: {
    readonly AttributeName: string;
    readonly AttributeType: 'S' | 'N' | 'B';
  }[];
  readonly globalSecondaryIndexes: IndexDefinition[];
  /** Enable DynamoDB TTL on this attribute (epoch seconds) so expired idempotency records go away. */
  readonly timeToLiveAttribute: string;
}

/**
 * The runs table as DynamoRunStore expects it. Tests and bootstrap pass it to
 * CreateTable; the CDK stack maps the same values to its Table construct, so
 * the code and the deployed table cannot drift apart.
 *
 * @example
 * const def = runTableDefinition();
 * await ddb.send(new CreateTableCommand({
 *   TableName: 'runs', BillingMode: 'PAY_PER_REQUEST',
 *   KeySchema: def.keySchema, AttributeDefinitions: def.attributeDefinitions,
 *   GlobalSecondaryIndexes: def.globalSecondaryIndexes,
 * }));
 * await ddb.send(new UpdateTimeToLiveCommand({ TableName: 'runs',
 *   TimeToLiveSpecification: { AttributeName: def.timeToLiveAttribute, Enabled: true } }));
 */
export function runTableDefinition(): RunTableDefinition {
  const index = (name: string, partition: string): IndexDefinition => ({
    IndexName: name,
    KeySchema: [
      { AttributeName: partition, KeyType: 'HASH' },
      { AttributeName: 'id', KeyType: 'RANGE' },
    ],
    Projection: { ProjectionType: 'ALL' },
  });
  return {
    keySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
    attributeDefinitions: ['pk', 'sk', 'id', 'list', 'state', 'batchId'].map((name) => ({
      AttributeName: name,
      AttributeType: 'S' as const,
    })),
    globalSecondaryIndexes: [
      index(INDEX.byId, 'list'),
      index(INDEX.byState, 'state'),
      index(INDEX.byBatch, 'batchId'),
    ],
    timeToLiveAttribute: TTL_ATTRIBUTE,
  };
}

const runKey = (id: string): Item => ({ pk: S(`RUN#${id}`), sk: S('RUN') });
const idempotencyKeyOf = (key: string): Item => ({ pk: S(`IDEMPOTENCY#${key}`), sk: S('IDEMPOTENCY') });
const accountKey = (account: string): Item => ({ pk: S(`ACCOUNT#${account}`), sk: S('ACCOUNT') });

function runItem(run: Run): Item {
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
    body: S(body),
  };
}

const runOf = (item: Item): Run => JSON.parse(item.body?.S ?? 'null') as Run;

interface CancellationReasonLike {
  readonly Code?: string | undefined;
  readonly Item?: Item | undefined;
}

function cancellationReasons(error: unknown): readonly CancellationReasonLike[] | undefined {
  if (errorName(error) !== 'TransactionCanceledException') return undefined;
  return (error as { CancellationReasons?: CancellationReasonLike[] }).CancellationReasons ?? [];
}

export interface DynamoRunStoreOptions {
  readonly tableName: string;
  /** Defaults to one client per process, configured from the environment (AWS_REGION, AWS_ENDPOINT_URL …). */
  readonly client?: DynamoDBClient;
  readonly clock?: Clock;
  /** How long an Idempotency-Key is remembered (default 24 h). */
  readonly idempotencyTtlSeconds?: number;
}

/**
 * RunStore over one DynamoDB table (design at the top of this file). Every
 * run write is conditional: `updateRun` only replaces the item while
 * `version = :expected AND NOT state IN (<terminal>)`, and a lost condition
 * becomes RunConflictError (or NotFoundError when there is no item).
 *
 * Writes are safe to retry: conditional writes ask for the old item on
 * failure, and when it is byte-for-byte what this call wrote (an SDK retry
 * after a lost response) the write counts as done instead of a conflict;
 * transactions carry a ClientRequestToken for the same reason.
 *
 * @example
 * const store = new DynamoRunStore({ tableName: process.env.RUNS_TABLE });
 * const { run } = await store.createRun(newRun(input, clock.now()), { idempotencyKey, fingerprint });
 * await store.updateRun(transition(run, 'dispatching', clock.now()), run.version);
 */
export class DynamoRunStore implements RunStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #clock: Clock;
  readonly #idempotencyTtlSeconds: number;

  constructor(options: DynamoRunStoreOptions) {
    if (options.tableName.length === 0) throw new ValidationError('tableName must not be empty');
    this.#client = options.client ?? defaultClient();
    this.#table = options.tableName;
    this.#clock = options.clock ?? systemClock;
    this.#idempotencyTtlSeconds = options.idempotencyTtlSeconds ?? DEFAULT_IDEMPOTENCY_TTL_SECONDS;
  }

  async createRun(run: Run, options: CreateRunOptions = {}): Promise<{ run: Run; created: boolean }> {
    const { idempotencyKey, fingerprint } = options;
    if (idempotencyKey === undefined) {
      await this.#insertOne(run);
      return { run, created: true };
    }
    if (fingerprint === undefined) {
      // Without a fingerprint a retried key could silently return a run for a different request.
      throw new ValidationError('An idempotency key needs a request fingerprint', [
        { path: 'fingerprint', message: 'required with idempotencyKey' },
      ]);
    }
    return this.#createIdempotent(run, idempotencyKey, fingerprint);
  }

  /**
   * All or none for up to 100 runs (one DynamoDB transaction; a batch is at
   * most 50). Larger inputs are written as several transactions: each is
   * atomic, and when a later one fails the earlier ones are deleted again
   * (only runs still at their first version). That undo is best effort — a
   * crash between the transactions leaves the earlier runs in place, where
   * the reconciler treats them as queued runs that never reached the queue.
   */
  async createRuns(runs: readonly Run[]): Promise<void> {
    if (runs.length === 0) return;
    const seen = new Set<string>();
    for (const run of runs) {
      if (seen.has(run.id)) throw new RunConflictError(`Run ${run.id} appears twice in the batch`);
      seen.add(run.id);
    }
    const chunks = chunkRuns(runs);
    const written: Run[] = [];
    for (const chunk of chunks) {
      try {
        await this.#transact(
          chunk.map((run) => ({
            Put: {
              TableName: this.#table,
              Item: runItem(run),
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          })),
        );
      } catch (error) {
        await this.#undo(written);
        const reasons = cancellationReasons(error);
        if (reasons !== undefined) {
          const existing = chunk.filter((_, i) => reasons[i]?.Code === 'ConditionalCheckFailed');
          if (existing.length > 0) {
            throw new RunConflictError(
              `Run${existing.length > 1 ? 's' : ''} ${existing.map((r) => r.id).join(', ')} already exist${existing.length > 1 ? '' : 's'}; no run of the batch was written`,
              { cause: error },
            );
          }
        }
        throw error;
      }
      written.push(...chunk);
    }
  }

  async getRun(id: string): Promise<Run | undefined> {
    const { Item } = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: runKey(id), ConsistentRead: true }),
    );
    return Item === undefined ? undefined : runOf(Item);
  }

  async updateRun(run: Run, expectedVersion: number): Promise<Run> {
    if (run.version <= expectedVersion) {
      // Writing the same version back would let a later writer's condition pass against changed data.
      throw new ValidationError(
        `Run ${run.id}: the new version (${run.version}) must be greater than the expected version (${expectedVersion})`,
      );
    }
    const item = runItem(run);
    const terminalNames = TERMINAL.map((_, i) => `:t${i}`);
    try {
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: item,
          ConditionExpression: `#version = :expected AND NOT (#state IN (${terminalNames.join(', ')}))`,
          ExpressionAttributeNames: { '#version': 'version', '#state': 'state' },
          ExpressionAttributeValues: {
            ':expected': N(expectedVersion),
            ...Object.fromEntries(TERMINAL.map((state, i) => [`:t${i}`, S(state)])),
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return run;
    } catch (error) {
      if (errorName(error) !== 'ConditionalCheckFailedException') throw error;
      const old = (error as { Item?: Item }).Item;
      if (old === undefined) throw new NotFoundError(`Run ${run.id} does not exist`, { cause: error });
      if (old.body?.S === item.body?.S) return run; // our own write, retried after a lost response
      const state = old.state?.S ?? 'unknown';
      const version = old.version?.N ?? 'unknown';
      if (TERMINAL.includes(state)) {
        throw new RunConflictError(
          `Run ${run.id} is ${state} (version ${version}) and can no longer change; the write expected version ${expectedVersion}`,
          { cause: error },
        );
      }
      throw new RunConflictError(
        `Run ${run.id} was changed by someone else: expected version ${expectedVersion}, found version ${version}`,
        { cause: error },
      );
    }
  }

  async listRuns(query: RunQuery): Promise<RunPage> {
    const { limit } = query;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw new ValidationError(`limit must be an integer from 1 to ${MAX_PAGE}`, [
        { path: 'limit', message: `must be an integer from 1 to ${MAX_PAGE}` },
      ]);
    }
    const after = query.cursor === undefined ? undefined : decodeIdCursor(query.cursor);

    let index: string;
    let partition: { name: string; value: string };
    let filter: { name: string; value: string } | undefined;
    if (query.batchId !== undefined) {
      index = INDEX.byBatch;
      partition = { name: 'batchId', value: query.batchId };
      if (query.state !== undefined) filter = { name: 'state', value: query.state };
    } else if (query.state !== undefined) {
      index = INDEX.byState;
      partition = { name: 'state', value: query.state };
    } else {
      index = INDEX.byId;
      partition = { name: 'list', value: LIST_VALUE };
    }

    // One extra item tells whether another page exists. The cursor is the last run id returned, which
    // `id < :after` resumes from: a filtered page stops in the middle of a DynamoDB page, where no
    // LastEvaluatedKey exists to hand out.
    const items = await queryAll(
      this.#client,
      {
        TableName: this.#table,
        IndexName: index,
        KeyConditionExpression: `#p = :p${after === undefined ? '' : ' AND #id < :after'}`,
        ...(filter === undefined ? {} : { FilterExpression: '#f = :f' }),
        ExpressionAttributeNames: {
          '#p': partition.name,
          ...(after === undefined ? {} : { '#id': 'id' }),
          ...(filter === undefined ? {} : { '#f': filter.name }),
        },
        ExpressionAttributeValues: {
          ':p': S(partition.value),
          ...(after === undefined ? {} : { ':after': S(after) }),
          ...(filter === undefined ? {} : { ':f': S(filter.value) }),
        },
        ScanIndexForward: false,
        // A filter is applied after Limit, so read further ahead per request when one is set.
        Limit: filter === undefined ? limit + 1 : Math.min(1000, (limit + 1) * 4),
      },
      limit + 1,
    );
    const runs = items.slice(0, limit).map(runOf);
    const last = runs.at(-1);
    return items.length > limit && last !== undefined
      ? { runs, nextCursor: encodeIdCursor(last.id) }
      : { runs };
  }

  async listActiveRuns(limit: number): Promise<readonly Run[]> {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new ValidationError('limit must be a positive integer', [
        { path: 'limit', message: 'must be a positive integer' },
      ]);
    }
    // Each state's oldest `limit` runs hold the overall oldest `limit`.
    const perState = await Promise.all(
      ACTIVE_STATES.map((state) =>
        queryAll(
          this.#client,
          {
            TableName: this.#table,
            IndexName: INDEX.byState,
            KeyConditionExpression: '#state = :state',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':state': S(state) },
            ScanIndexForward: true,
            Limit: Math.min(limit, 1000),
          },
          limit,
        ),
      ),
    );
    return perState
      .flat()
      .map(runOf)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, limit);
  }

  async holdAccount(account: string, runId: string, options: { replacing?: string } = {}): Promise<string> {
    const replacing = options.replacing ?? runId;
    try {
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: { ...accountKey(account), runId: S(runId), since: S(this.#clock.now()) },
          ConditionExpression:
            'attribute_not_exists(pk) OR attribute_not_exists(runId) OR runId = :me OR runId = :replacing',
          ExpressionAttributeValues: { ':me': S(runId), ':replacing': S(replacing) },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return runId;
    } catch (error) {
      if (errorName(error) !== 'ConditionalCheckFailedException') throw error;
      const holder = (error as { Item?: Item }).Item?.runId?.S;
      if (holder !== undefined) return holder;
      // The old item did not come back (an emulator): read who holds it.
      const { Item } = await this.#client.send(
        new GetItemCommand({ TableName: this.#table, Key: accountKey(account), ConsistentRead: true }),
      );
      return Item?.runId?.S ?? this.holdAccount(account, runId, options);
    }
  }

  /** An UpdateItem, not a DeleteItem: the on-prem relay releases holds, and its role may not delete items. */
  async releaseAccount(account: string, runId: string): Promise<void> {
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: accountKey(account),
          UpdateExpression: 'REMOVE runId',
          ConditionExpression: 'runId = :me',
          ExpressionAttributeValues: { ':me': S(runId) },
        }),
      );
    } catch (error) {
      if (errorName(error) !== 'ConditionalCheckFailedException') throw error;
    }
  }

  async #insertOne(run: Run): Promise<void> {
    const item = runItem(run);
    try {
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: item,
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (error) {
      if (errorName(error) !== 'ConditionalCheckFailedException') throw error;
      if ((error as { Item?: Item }).Item?.body?.S === item.body?.S) return; // our own write, retried
      throw new RunConflictError(`Run ${run.id} already exists`, { cause: error });
    }
  }

  /**
   * The key record and the run in one transaction, so a key never points at
   * a run that was not written. A losing concurrent retry sees the winner's
   * key record in the cancellation reason and answers with its run.
   */
  async #createIdempotent(
    run: Run,
    key: string,
    fingerprint: string,
  ): Promise<{ run: Run; created: boolean }> {
    let orphanOf: string | undefined;
    for (let attempt = 1; ; attempt += 1) {
      const nowSeconds = Math.floor(this.#clock.nowMs() / 1000);
      try {
        await this.#transact([
          {
            Put: {
              TableName: this.#table,
              Item: {
                ...idempotencyKeyOf(key),
                fingerprint: S(fingerprint),
                runId: S(run.id),
                [TTL_ATTRIBUTE]: N(nowSeconds + this.#idempotencyTtlSeconds),
              },
              // DynamoDB deletes expired items only eventually (up to days later), so expiry is checked here too.
              ConditionExpression: `attribute_not_exists(pk) OR #ttl <= :now${orphanOf === undefined ? '' : ' OR runId = :orphan'}`,
              ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE },
              ExpressionAttributeValues: {
                ':now': N(nowSeconds),
                ...(orphanOf === undefined ? {} : { ':orphan': S(orphanOf) }),
              },
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            },
          },
          {
            Put: {
              TableName: this.#table,
              Item: runItem(run),
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ]);
        return { run, created: true };
      } catch (error) {
        const reasons = cancellationReasons(error);
        if (reasons === undefined) throw error;
        if (reasons[1]?.Code === 'ConditionalCheckFailed') {
          throw new RunConflictError(`Run ${run.id} already exists`, { cause: error });
        }
        if (reasons[0]?.Code !== 'ConditionalCheckFailed') throw error;
        const record =
          reasons[0].Item ??
          (
            await this.#client.send(
              new GetItemCommand({
                TableName: this.#table,
                Key: idempotencyKeyOf(key),
                ConsistentRead: true,
              }),
            )
          ).Item;
        if (record === undefined) continue; // expired and removed meanwhile: try again
        const firstId = record.runId?.S ?? '';
        if (record.fingerprint?.S !== fingerprint) {
          throw new IdempotencyMismatchError(
            `Idempotency key "${key}" was already used for a different request (run ${firstId})`,
          );
        }
        const first = await this.getRun(firstId);
        if (first !== undefined) return { run: first, created: false };
        // The key points at a run that no longer exists: take the key over, as the SQLite store does.
        if (attempt > 3) throw error;
        orphanOf = firstId;
      }
    }
  }

  /** TransactWriteItems, retried a few times when it collided with a concurrent transaction. */
  async #transact(items: TransactWriteItem[]): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        // The SDK's own retries resend this token, and DynamoDB answers a repeat of a committed transaction with success.
        await this.#client.send(
          new TransactWriteItemsCommand({ TransactItems: items, ClientRequestToken: randomUUID() }),
        );
        return;
      } catch (error) {
        const reasons = cancellationReasons(error);
        const collided =
          reasons?.some((r) => r.Code === 'TransactionConflict') === true &&
          !reasons.some((r) => r.Code === 'ConditionalCheckFailed');
        if (!collided && errorName(error) !== 'TransactionInProgressException') throw error;
        if (attempt >= TRANSACTION_CONFLICT_RETRIES) {
          throw new RunConflictError('A concurrent write to the same runs kept conflicting; try again', {
            cause: error,
          });
        }
        await sleep(20 * 2 ** attempt * Math.random());
      }
    }
  }

  /** Best-effort removal of runs this call wrote, only while nobody has changed them. */
  async #undo(runs: readonly Run[]): Promise<void> {
    await Promise.allSettled(
      runs.map((run) =>
        this.#client.send(
          new DeleteItemCommand({
            TableName: this.#table,
            Key: runKey(run.id),
            ConditionExpression: '#version = :version',
            ExpressionAttributeNames: { '#version': 'version' },
            ExpressionAttributeValues: { ':version': N(run.version) },
          }),
        ),
      ),
    );
  }
}

/** Split into transactions of at most 100 items and well under 4 MB. */
function chunkRuns(runs: readonly Run[]): Run[][] {
  const chunks: Run[][] = [];
  let current: Run[] = [];
  let bytes = 0;
  for (const run of runs) {
    const size = Buffer.byteLength(JSON.stringify(run), 'utf8') + 512;
    if (
      current.length > 0 &&
      (current.length >= MAX_TRANSACTION_ITEMS || bytes + size > MAX_TRANSACTION_BYTES)
    ) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(run);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
