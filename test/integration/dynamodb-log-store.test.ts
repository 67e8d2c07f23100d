import { DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoLogStore } from '../../shared/adapters/dynamodb/log-store.ts';
import { logStoreContract } from '../contract/log-store.contract.ts';
import { createRunTable, oneRequestAtATime, useMoto } from '../support/moto.ts';

/**
 * DynamoLogStore on moto, in the runs table (as the relay uses it by default).
 * moto never expires TTL items, so expiry is checked by the attribute only.
 * moto's `ADD` is not atomic between two requests at once (both can answer
 * the same value, which DynamoDB never does), so the client sends one request
 * at a time: the concurrent writers below still interleave their reserve and
 * write steps, which is what the store's numbering must survive.
 */
const moto = useMoto();
const TABLE = 'runs';
let client: DynamoDBClient;

beforeAll(async () => {
  client = oneRequestAtATime(new DynamoDBClient(moto().clientConfig()));
  await createRunTable(client, TABLE);
});

logStoreContract('dynamodb (moto)', async () => ({
  store: new DynamoLogStore({ tableName: TABLE, client }),
  cleanup: async () => {},
}));

describe('DynamoLogStore', () => {
  it('writes one item per appended batch, with a TTL, and splits a batch too big for one item', async () => {
    const store = new DynamoLogStore({ tableName: TABLE, client, ttlSeconds: 3600 });
    const runId = `run-${Date.now()}`;
    const big = 'x'.repeat(100 * 1024);

    await store.append(runId, [
      { stream: 'stdout', text: 'a' },
      { stream: 'stdout', text: 'b' },
    ]);
    await store.append(
      runId,
      [1, 2, 3, 4].map((i) => ({ stream: 'stdout' as const, text: `${i}${big}` })),
    );

    const { Items = [] } = await client.send(
      new QueryCommand({
        TableName: TABLE,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: `LOG#${runId}` } },
      }),
    );
    // The counter, the small batch, and the big batch in two chunks of at most 300 KB.
    expect(Items.map((i) => i.sk?.S)).toEqual([
      '#SEQ',
      '000000000000002',
      '000000000000004',
      '000000000000006',
    ]);
    const nowSeconds = Date.now() / 1000;
    for (const item of Items) {
      expect(Number(item.expiresAt?.N)).toBeGreaterThan(nowSeconds + 3500);
      expect(Number(item.expiresAt?.N)).toBeLessThan(nowSeconds + 3700);
    }
    const page = await store.read(runId, { limit: 10 });
    expect(page.lines.map((l) => [l.seq, l.text.slice(0, 1)])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, '1'],
      [4, '2'],
      [5, '3'],
      [6, '4'],
    ]);
  });

  it('never gives two writers of one run the same numbers', async () => {
    const runId = `run-two-writers-${Date.now()}`;
    const a = new DynamoLogStore({ tableName: TABLE, client });
    const b = new DynamoLogStore({ tableName: TABLE, client });

    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? a : b).append(runId, [
          { stream: 'stdout', text: `w${i}-1` },
          { stream: 'stdout', text: `w${i}-2` },
        ]),
      ),
    );

    const { lines } = await a.read(runId, { limit: 100 });
    expect(lines.map((l) => l.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    for (let i = 0; i < 10; i++) {
      const first = lines.findIndex((l) => l.text === `w${i}-1`);
      expect(lines[first + 1]?.text).toBe(`w${i}-2`);
    }
  });
});
