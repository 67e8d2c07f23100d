import { randomBytes, randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDiscoveryStore, MAX_LISTING_BYTES } from '../../shared/adapters/dynamodb/discovery-store.ts';
import type { DiscoveredRow } from '../../shared/domain/discovery.ts';
import { type DiscoveryStore, MemoryDiscoveryStore } from '../../shared/ports/discovery-store.ts';
import { createRunTable, useMoto } from '../support/moto.ts';

/*
 * The DiscoveryStore contract, run against both adapters: local mode's
 * memory and the runs table (DynamoDB on moto, which enforces the 400 KB
 * item limit and conditional writes as DynamoDB does).
 */

const row = (n: number, over: Partial<DiscoveredRow> = {}): DiscoveredRow => ({
  id: `aws-i-${n}`,
  cloud: 'aws',
  name: `vm-${n}`,
  cloudId: `i-${n}`,
  state: 'running',
  privateAddress: `10.0.${Math.floor(n / 250)}.${n % 250}`,
  os: 'linux',
  ...over,
});
const at = (minute: number) => new Date(Date.UTC(2026, 11, 1, 10, minute)).toISOString();

const moto = useMoto();
let dynamodb: DynamoDBClient;
beforeAll(() => {
  dynamodb = new DynamoDBClient(moto().clientConfig());
});
afterAll(() => dynamodb?.destroy());

const stores: [string, () => Promise<DiscoveryStore>][] = [
  ['memory', async () => new MemoryDiscoveryStore()],
  [
    'dynamodb',
    async () => {
      const tableName = `runs-${randomUUID().slice(0, 8)}`;
      await createRunTable(dynamodb, tableName);
      return new DynamoDiscoveryStore({ client: dynamodb, tableName });
    },
  ],
];

describe.each(stores)('DiscoveryStore contract: %s', (_name, makeStore) => {
  it('has nothing for a cloud never saved, and round-trips a listing exactly', async () => {
    const store = await makeStore();
    const rows = [
      row(1),
      row(2, { state: 'stopped', untargetableReason: 'The VM is stopped', labels: { env: 'é' } }),
    ];

    expect(await store.get('aws')).toBeUndefined();
    await store.saveListing('aws', rows, at(1));

    expect(await store.get('aws')).toEqual({ rows, refreshedAt: at(1) });
    expect(await store.get('gcp')).toBeUndefined();
  });

  it('keeps the rows and their time on a failure, and clears the error with the next success', async () => {
    const store = await makeStore();
    await store.saveListing('aws', [row(1)], at(1));

    await store.saveFailure('aws', 'EC2 DescribeInstances in us-east-1 failed: throttled', at(2));
    const failed = await store.get('aws');
    await store.saveListing('aws', [row(3)], at(3));

    expect(failed).toEqual({
      rows: [row(1)],
      refreshedAt: at(1),
      error: 'EC2 DescribeInstances in us-east-1 failed: throttled',
    });
    expect(await store.get('aws')).toEqual({ rows: [row(3)], refreshedAt: at(3) });
  });

  it('records a failure before any success with no rows', async () => {
    const store = await makeStore();

    await store.saveFailure('azure', 'azure did not answer within 20 s', at(1));

    expect(await store.get('azure')).toEqual({ rows: [], error: 'azure did not answer within 20 s' });
  });

  it('keeps the newer list when an older refresh finishes last (two functions racing)', async () => {
    const store = await makeStore();
    await store.saveListing('aws', [row(2)], at(5));

    await store.saveListing('aws', [row(1)], at(4));
    await store.saveFailure('aws', 'late failure of an older refresh', at(4));

    expect(await store.get('aws')).toEqual({ rows: [row(2)], refreshedAt: at(5) });
  });
});

describe('DynamoDiscoveryStore', () => {
  it('holds thousands of VMs in the one item per cloud, compressed', async () => {
    const tableName = `runs-${randomUUID().slice(0, 8)}`;
    await createRunTable(dynamodb, tableName);
    const store = new DynamoDiscoveryStore({ client: dynamodb, tableName });
    const rows = Array.from({ length: 5000 }, (_, n) => row(n, { labels: { team: `team-${n % 40}` } }));

    await store.saveListing('aws', rows, at(1));

    expect((await store.get('aws'))?.rows).toHaveLength(5000);
  });

  it('refuses a list one item cannot hold, saying so, and keeps the previous one', async () => {
    const tableName = `runs-${randomUUID().slice(0, 8)}`;
    await createRunTable(dynamodb, tableName);
    const store = new DynamoDiscoveryStore({ client: dynamodb, tableName });
    await store.saveListing('aws', [row(1)], at(1));
    // Random names do not compress: well past MAX_LISTING_BYTES once gzip'd.
    const huge = Array.from({ length: 4000 }, (_, n) => row(n, { name: randomBytes(96).toString('hex') }));

    await expect(store.saveListing('aws', huge, at(2))).rejects.toThrow(
      new RegExp(
        `^The 4000 VMs listed take \\d+ KB compressed, more than one cache item holds \\(${MAX_LISTING_BYTES / 1024} KB\\): narrow this cloud's discovery settings`,
      ),
    );
    expect(await store.get('aws')).toEqual({ rows: [row(1)], refreshedAt: at(1) });
  });
});
