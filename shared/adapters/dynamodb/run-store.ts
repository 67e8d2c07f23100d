import {
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { decodeIdCursor } from '../../domain/cursor.ts';
import { NotFoundError, RunConflictError, ValidationError } from '../../domain/errors.ts';
import { checkLimit } from '../../domain/page-limit.ts';
import { type Run, TERMINAL_STATES } from '../../domain/run.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import type * as port from '../../ports/run-store.ts';
import { pageOf } from '../../ports/run-store.ts';
import { type HoldTable, holdAccount, releaseAccount } from './account-holds.ts';
import {
  cancellationReasons,
  errorName,
  type Item,
  N,
  runItem,
  runKey,
  runOf,
  runTableOf,
  S,
} from './items.ts';
import { dynamoGetRuns, dynamoRelayClaim } from './relay-claim.ts';
import { dynamoAdvanceRun } from './run-advance.ts';
import { claimRun } from './run-claim.ts';
import { oldestActiveRuns, queryRunList } from './run-queries.ts';
import { chunkRuns, createIdempotent, transact } from './transactions.ts';

const TERMINAL: readonly string[] = TERMINAL_STATES;

const MAX_PAGE = 100;
const DEFAULT_IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

export interface DynamoRunStoreOptions {
  readonly tableName: string;
  /** Defaults to one client per process, configured from the environment (AWS_REGION, AWS_ENDPOINT_URL …). */
  readonly client?: DynamoDBClient;
  readonly clock?: Clock;
  /** How long an Idempotency-Key is remembered (default 24 h). */
  readonly idempotencyTtlSeconds?: number;
}

/**
 * RunStore over one DynamoDB table (its layout: shared/domain/run-table.ts). Every
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
export class DynamoRunStore implements port.RunStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #clock: Clock;
  readonly #idempotencyTtlSeconds: number;
  readonly #t: HoldTable;

  constructor(options: DynamoRunStoreOptions) {
    ({ client: this.#client, table: this.#table } = runTableOf(options));
    this.#clock = options.clock ?? systemClock;
    this.#idempotencyTtlSeconds = options.idempotencyTtlSeconds ?? DEFAULT_IDEMPOTENCY_TTL_SECONDS;
    this.#t = { client: this.#client, table: this.#table, clock: this.#clock };
  }

  async createRun(run: Run, options: port.CreateRunOptions = {}): Promise<{ run: Run; created: boolean }> {
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
    return createIdempotent(
      {
        ...this.#t,
        idempotencyTtlSeconds: this.#idempotencyTtlSeconds,
        getRun: (id) => this.getRun(id),
      },
      run,
      idempotencyKey,
      fingerprint,
    );
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
        await transact(
          this.#client,
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
      // The item as the condition found it: whoever retries decides from it without reading it again.
      // One that cannot be read leaves the retry to read it, and the conflict is still a conflict.
      const current = runOrUndefined(old);
      if (TERMINAL.includes(state)) {
        throw new RunConflictError(
          `Run ${run.id} is ${state} (version ${version}) and can no longer change; the write expected version ${expectedVersion}`,
          { cause: error, current },
        );
      }
      throw new RunConflictError(
        `Run ${run.id} was changed by someone else: expected version ${expectedVersion}, found version ${version}`,
        { cause: error, current },
      );
    }
  }

  async listRuns(query: port.RunQuery): Promise<port.RunPage> {
    const { limit } = query;
    checkLimit(limit, MAX_PAGE);
    const after = query.cursor === undefined ? undefined : decodeIdCursor(query.cursor);

    const items = await queryRunList(this.#t, query, after, limit);
    return pageOf(items, limit, runOf);
  }

  async listActiveRuns(limit: number): Promise<readonly Run[]> {
    checkLimit(limit);
    return oldestActiveRuns(this.#t, limit);
  }

  holdAccount(account: string, runId: string, options: { replacing?: string } = {}): Promise<string> {
    return holdAccount(this.#t, account, runId, options);
  }

  /** An UpdateItem, not a DeleteItem: the on-prem relay releases holds, and its role may not delete items. */
  releaseAccount(account: string, runId: string): Promise<void> {
    return releaseAccount(this.#t, account, runId);
  }

  /** One conditional UpdateItem returning the run (run-claim.ts); no read before it. */
  claimRun(id: string, claim: port.RunClaim): Promise<{ run: Run; claimed: boolean } | undefined> {
    return claimRun(this.#t, id, claim);
  }

  /** One UpdateItem, ALL_NEW (shared/adapters/dynamodb/relay-claim.ts). */
  claimRelayRun(runId: string, claim: port.RelayClaimRequest): Promise<port.RelayClaimResult> {
    return dynamoRelayClaim(this.#t, runId, claim);
  }

  /** One BatchGetItem per 100 ids. */
  getRuns(ids: readonly string[]): Promise<readonly Run[]> {
    return dynamoGetRuns(this.#t, ids);
  }

  /** One conditional UpdateItem returning the run, no read (run-advance.ts). */
  advanceRun(id: string, advance: port.RunAdvance): Promise<port.RunAdvanceResult> {
    return dynamoAdvanceRun(this.#t, id, advance);
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

/** The run an item holds, or undefined when its body cannot be read (RunConflictError.current is optional). */
function runOrUndefined(item: Item): Run | undefined {
  try {
    return runOf(item);
  } catch {
    return undefined;
  }
}
