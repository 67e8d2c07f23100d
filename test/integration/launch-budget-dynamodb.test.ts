import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { CallCounter } from '../../bench/support/call-counter.ts';
import { DynamoLaunchBudgets } from '../../shared/adapters/dynamodb/launch-budget.ts';
import { leasing } from '../../shared/domain/launch-budget-lease.ts';
import { createRunTable, oneRequestAtATime, useMoto } from '../support/moto.ts';

/*
 * The DynamoDB launch budget against moto, under concurrency: several
 * "containers" (each its own store, with its own view of the bucket, as Lambda
 * containers have) take from one bucket at once, their guesses, conditional
 * writes and retries interleaving. Time is passed in, so the number that may
 * be granted is exact.
 *
 * moto differs from DynamoDB here: its conditional writes are not atomic
 * under concurrent requests (two `attribute_not_exists` creates can both
 * succeed; test/support/moto.ts oneRequestAtATime), so the requests reach
 * moto one at a time through one client. DynamoDB makes each conditional
 * write atomic per item, which is all the adapter relies on.
 */

const moto = useMoto();
const table = `runs-${randomUUID().slice(0, 8)}`;
const CONTAINERS = 4;
const T0 = 1_800_000_000_000;
const BUDGET = { perSecond: 10, burst: 37 };

let counter: CallCounter;
let client: DynamoDBClient;
const container = () => new DynamoLaunchBudgets({ client, tableName: table });

beforeAll(async () => {
  counter = new CallCounter();
  client = counter.count('DynamoDB', oneRequestAtATime(new DynamoDBClient(moto().clientConfig())));
  const admin = new DynamoDBClient(moto().clientConfig());
  await createRunTable(admin, table);
  admin.destroy();
});

/** `perContainer` takes at `nowMs` from each container at once; how many were granted. */
async function burst(stores: DynamoLaunchBudgets[], key: string, perContainer: number, nowMs: number) {
  const budget = BUDGET;
  const takes = await Promise.all(
    stores.flatMap((s) => Array.from({ length: perContainer }, () => s.take(key, budget, nowMs))),
  );
  return takes.filter((t) => t.granted).length;
}

describe('DynamoLaunchBudgets (moto)', () => {
  it('grants the burst exactly once across concurrent containers, then only the refill', async () => {
    const stores = Array.from({ length: CONTAINERS }, container);
    const key = `ecs#123456789012/us-east-1#${randomUUID()}`;

    const calls = await counter.measure(async () => {
      // Containers lease tokens (a tenth of the burst each write), from a bucket lowered by one lease
      // so that tokens spent late still fit: 37 − 3 (shared/domain/launch-budget-lease.ts).
      expect(await burst(stores, key, 25, T0)).toBe(37 - leasing(BUDGET).size);
    });
    // A take is one write when the container's guess is right; cold and racing, a take and its place
    // in the waiting line are two writes each at most.
    expect(calls.get('DynamoDB.UpdateItem') ?? 0).toBeLessThanOrEqual(100 * 4);

    // Still T0: nothing more. A container that has seen the empty bucket sends no take, only its place
    // in the waiting line (written again when another container moved the line first).
    const idle = await counter.measure(async () => {
      expect(await burst(stores, key, 25, T0)).toBe(0);
    });
    expect(idle.get('DynamoDB.UpdateItem') ?? 0).toBeLessThanOrEqual(100 * 4);

    // One second later: 10 tokens came back, for everyone together.
    expect(await burst(stores, key, 25, T0 + 1000)).toBe(10);
    // A minute later the bucket is full again, never fuller.
    expect(await burst(stores, key, 25, T0 + 60_000)).toBe(37 - leasing(BUDGET).size);
  }, 60_000);

  it('says how long to wait, and that wait is enough', async () => {
    const store = container();
    const key = `aci#sub/westeurope#${randomUUID()}`;
    const budget = { perSecond: 4, burst: 2 };
    expect(await store.take(key, budget, T0)).toEqual({ granted: true });
    expect(await store.take(key, budget, T0)).toEqual({ granted: true });
    const refused = await store.take(key, budget, T0);
    expect(refused).toEqual({ granted: false, retryAfterMs: 250 });
    // The next waiter, in another container that has never seen the bucket, is placed a token later.
    expect(await container().take(key, budget, T0)).toEqual({ granted: false, retryAfterMs: 500 });
    expect(await container().take(key, budget, T0 + 249)).toMatchObject({ granted: false });
    expect(await container().take(key, budget, T0 + 250)).toEqual({ granted: true });
    expect(await container().take(key, budget, T0 + 500)).toEqual({ granted: true });
  }, 30_000);

  it('keeps scopes apart', async () => {
    const store = container();
    const budget = { perSecond: 1, burst: 1 };
    expect(await store.take(`ecs#a/${T0}`, budget, T0)).toEqual({ granted: true });
    expect(await store.take(`ecs#b/${T0}`, budget, T0)).toEqual({ granted: true });
    expect((await store.take(`ecs#a/${T0}`, budget, T0)).granted).toBe(false);
  }, 30_000);
});
