/**
 * The deployed discovery cache (shared/adapters/dynamodb/discovery-store.ts)
 * on moto's DynamoDB: what a run on a discovered VM adds to submit and
 * dispatch, and how much of DynamoDB's 400 KB item one cloud's list takes.
 *
 * - Target lookup of a discovered VM (one GetItem of the cloud's item, gunzip,
 *   JSON parse, find) among `--vms` VMs (default 2,000), against the floor of
 *   the registry lookup every run already makes (one GetItem of a target
 *   item), both timed in this run, median of `--repeat` (default 200).
 * - A batch of 50 such lookups in one invocation (the lookup cache), against
 *   50 registry lookups.
 * - The compressed size of 10,000 VMs' list against the item limit.
 *
 *   npx tsx bench/discovery-cache.ts [--vms N] [--repeat N]
 */
import { randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDiscoveryStore } from '../shared/adapters/dynamodb/discovery-store.ts';
import { DynamoTargetStore } from '../shared/adapters/dynamodb/target-store.ts';
import { DiscoveryCache } from '../shared/app/discovery.ts';
import { type DiscoveredRow, discoveredRow } from '../shared/domain/discovery.ts';
import { systemClock } from '../shared/ports/clock.ts';
import { createRunTable, startMoto } from '../test/support/moto.ts';
import { reportFigure } from './support/figures.ts';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i === -1 ? Number.NaN : Number(process.argv[i + 1]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}
const VMS = option('vms', 2000);
const REPEAT = option('repeat', 200);

/** EC2-like rows: instance ids, private addresses, a Name and two tags. */
const rows = (count: number): DiscoveredRow[] =>
  Array.from({ length: count }, (_, n) => {
    const cloudId = `i-0${(0x1000000 + n * 7919).toString(16)}${randomUUID().slice(0, 8)}`;
    return discoveredRow({
      id: `aws-${cloudId}`,
      cloud: 'aws',
      name: `app-${n % 97}-${n}`,
      cloudId,
      location: 'eu-west-1',
      state: n % 10 === 0 ? 'stopped' : 'running',
      privateAddress: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
      os: n % 20 === 0 ? 'windows' : 'linux',
      labels: { Name: `app-${n % 97}-${n}`, team: `team-${n % 13}`, env: n % 3 === 0 ? 'prod' : 'test' },
    });
  });

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};

async function timed(call: () => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < REPEAT; i += 1) {
    const start = performance.now();
    await call();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

const moto = await startMoto();
try {
  const client = new DynamoDBClient(moto.clientConfig());
  const tableName = `runs-${randomUUID().slice(0, 8)}`;
  await createRunTable(client, tableName);
  const store = new DynamoDiscoveryStore({ client, tableName });
  const listed = rows(VMS);
  await store.saveListing('aws', listed, systemClock.now());
  const targets = new DynamoTargetStore({ client, tableName });
  await targets.putTarget({
    id: 'web-1',
    kind: 'vm',
    cloud: 'aws',
    name: 'web-1',
    address: '10.0.0.5',
    connection: 'ssh',
    createdAt: systemClock.now(),
    updatedAt: systemClock.now(),
  });
  const reader = new DiscoveryCache([], systemClock, undefined, { store, clouds: ['aws'] });
  const wanted = listed[Math.floor(VMS / 2)]?.id ?? '';
  if ((await reader.target(wanted)) === undefined) throw new Error('the discovered VM is not found');

  // Interleave warm-up of both paths, then time each.
  await timed(() => targets.getTarget('web-1'));
  await timed(() => reader.target(wanted));
  const floor = await timed(() => targets.getTarget('web-1'));
  const now = await timed(() => reader.target(wanted));
  reportFigure({
    figure: `Discovered-VM target lookup, ${VMS} VMs in the cloud's item`,
    now,
    floor,
    unit: 'ms',
    goal: '≤ 3×',
    note: `median of ${REPEAT}; floor: the registry lookup (GetItem of one target) on the same moto`,
  });

  // Part of that: unpacking the item in the function (the rest is moto serving a larger item).
  const packed = gzipSync(JSON.stringify(listed));
  const unpack = await timed(async () => JSON.parse(gunzipSync(packed).toString('utf8')));
  console.log(
    `  of which gunzip + JSON.parse of the ${(packed.byteLength / 1024).toFixed(0)} KiB item: ${unpack.toFixed(2)} ms`,
  );

  // A batch of 50 discovered VMs, as submit and dispatch look them up with the deployed stack's 5 s lookup cache.
  const batchIds = listed.slice(0, 50).map((row) => row.id);
  const registry = await Promise.all(
    batchIds.map((id, n) =>
      targets.putTarget({
        id: `reg-${n}`,
        kind: 'vm',
        cloud: 'aws',
        name: id,
        address: '10.0.0.5',
        connection: 'ssh',
        createdAt: systemClock.now(),
        updatedAt: systemClock.now(),
      }),
    ),
  );
  const batchFloor = await timed(() => Promise.all(registry.map((t) => targets.getTarget(t.id))));
  const batchNow = await timed(() => {
    const fresh = new DiscoveryCache([], systemClock, undefined, {
      store,
      clouds: ['aws'],
      lookupCacheSeconds: 5,
    });
    return Promise.all(batchIds.map((id) => fresh.target(id)));
  });
  reportFigure({
    figure: `A batch of 50 discovered-VM lookups, ${VMS} VMs in the cloud's item`,
    now: batchNow,
    floor: batchFloor,
    unit: 'ms',
    goal: '≤ 1×',
    note: `median of ${REPEAT}, a new cache each time (a cold function); floor: 50 registry lookups in parallel`,
  });

  const big = gzipSync(JSON.stringify(rows(10_000))).byteLength / 1024;
  reportFigure({
    figure: "One cloud's discovery item, 10,000 VMs, gzip'd",
    now: big,
    floor: 400,
    unit: 'KiB',
    goal: '≤ 1× (DynamoDB item limit)',
    note: 'EC2-like rows with a Name and two tags; MAX_LISTING_BYTES is 380 KiB',
  });
  client.destroy();
} finally {
  await moto.stop();
}
