import { randomUUID } from 'node:crypto';
import type { DynamoDBClient, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { GetItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { IdempotencyMismatchError, RunConflictError } from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import { TTL_ATTRIBUTE } from '../../domain/run-table.ts';
import { backoffMs } from '../../lib/backoff.ts';
import { sleep } from '../../lib/sleep.ts';
import type { Clock } from '../../ports/clock.ts';
import { cancellationReasons, errorName, idempotencyKeyOf, N, type RunTable, runItem, S } from './items.ts';

/** TransactWriteItems takes at most 100 actions and 4 MB; leave room for request overhead. */
const MAX_TRANSACTION_ITEMS = 100;
const MAX_TRANSACTION_BYTES = 3_500_000;
const TRANSACTION_CONFLICT_RETRIES = 5;

/** TransactWriteItems, retried a few times when it collided with a concurrent transaction. */
export async function transact(client: DynamoDBClient, items: TransactWriteItem[]): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      // The SDK's own retries resend this token, and DynamoDB answers a repeat of a committed transaction with success.
      await client.send(
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
      await sleep(backoffMs(attempt, { baseMs: 20, jitter: Math.random }));
    }
  }
}

/** What an idempotent create needs beyond the table: the time, the key's lifetime, and a strong read of a run. */
export interface IdempotentTable extends RunTable {
  readonly clock: Clock;
  readonly idempotencyTtlSeconds: number;
  readonly getRun: (id: string) => Promise<Run | undefined>;
}

/**
 * The key record and the run in one transaction, so a key never points at
 * a run that was not written. A losing concurrent retry sees the winner's
 * key record in the cancellation reason and answers with its run.
 */
export async function createIdempotent(
  t: IdempotentTable,
  run: Run,
  key: string,
  fingerprint: string,
): Promise<{ run: Run; created: boolean }> {
  let orphanOf: string | undefined;
  for (let attempt = 1; ; attempt += 1) {
    const nowSeconds = Math.floor(t.clock.nowMs() / 1000);
    try {
      await transact(t.client, [
        {
          Put: {
            TableName: t.table,
            Item: {
              ...idempotencyKeyOf(key),
              fingerprint: S(fingerprint),
              runId: S(run.id),
              [TTL_ATTRIBUTE]: N(nowSeconds + t.idempotencyTtlSeconds),
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
            TableName: t.table,
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
          await t.client.send(
            new GetItemCommand({
              TableName: t.table,
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
      const first = await t.getRun(firstId);
      if (first !== undefined) return { run: first, created: false };
      // The key points at a run that no longer exists: take the key over, as the SQLite store does.
      if (attempt > 3) throw error;
      orphanOf = firstId;
    }
  }
}

/** Split into transactions of at most 100 items and well under 4 MB. */
export function chunkRuns(runs: readonly Run[]): Run[][] {
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
