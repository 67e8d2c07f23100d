/**
 * Cold start of every Lambda bundle, bundled with esbuild exactly as the CDK
 * stack does (infra/bundling.ts), each against its floor: a bundle, built the
 * same way in the same run, that imports and constructs only the AWS SDK
 * clients that handler uses (Healthz and the other routes that use none: an
 * empty handler). Prints a table and one figure per function
 * (bench/support/figures.ts `reportFigure`); asserts nothing.
 *
 *   npx tsx bench/lambda-bundles.ts          # 11 fresh processes per bundle
 *   BENCH_RUNS=31 npx tsx bench/lambda-bundles.ts
 *
 * Bundles are code-split as deployed: `index.mjs` with its chunks beside it
 * under `chunks/`, the function's asset directory. Per bundle, in a fresh
 * `node` process each time (so nothing is cached):
 * - load: `await import('<dir>/index.mjs')`, as Lambda loads the handler — the
 *   entry and its static imports, what a cold start pays before the handler
 *   runs; chunks behind an `import()` load when the code reaches them;
 * - first call: the first invocation on top of that, with a harmless event
 *   (an API request without an authorizer → 401, an empty SQS batch, a
 *   scheduled event). The handlers build their composition on this first
 *   call, and a floor constructs its clients on its first call, so load +
 *   first call is the cold start's code cost on both sides. SDK clients make no call.
 * Figures are medians, round-robin over all bundles so load on the machine
 * spreads evenly. The machine is not Lambda: compare the ratios, not the
 * milliseconds.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { esbuildOptionsFor } from '../infra/bundling.ts';
import { API_HANDLERS, constructIdOf, type HandlerSpec, WORKER_HANDLERS } from '../infra/handlers.ts';
import { reportFigure } from './support/figures.ts';

const REPO = resolve(import.meta.dirname, '..');
const RUNS = Number(process.env.BENCH_RUNS ?? 11);
const out = mkdtempSync(join(tmpdir(), 'rw-lambda-bundles-'));

type Kind = 'http' | 'sqs' | 'other';
interface Bundle {
  readonly name: string;
  readonly file: string;
  readonly kind: Kind;
}

const API_EVENT = {
  version: '2.0',
  routeKey: 'GET /bench',
  rawPath: '/bench',
  rawQueryString: '',
  headers: {},
  requestContext: { http: { method: 'GET', path: '/bench', sourceIp: '127.0.0.1' }, requestId: 'bench' },
  isBase64Encoded: false,
};
const SQS_EVENT = { Records: [] };
/**
 * EventBridge functions (status sync, reconciler, poller, scheduled refresh):
 * a scheduled event. With nothing configured each returns or fails fast (the
 * endpoint refuses), after building its composition: with code splitting, a
 * function that is only imported would load none of it and look cheaper than
 * it is.
 */
const SCHEDULED_EVENT = {
  version: '0',
  id: 'bench',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '111111111111',
  time: '2026-01-01T00:00:00Z',
  region: 'eu-west-1',
  resources: [],
  detail: {},
};

/** Runs in the child: import, then (optionally) one invocation; prints the two durations. */
const CHILD = `
const [file, kind] = process.argv.slice(1);
const events = { http: ${JSON.stringify(API_EVENT)}, sqs: ${JSON.stringify(SQS_EVENT)}, other: ${JSON.stringify(SCHEDULED_EVENT)} };
const context = { functionName: 'bench', awsRequestId: 'bench', getRemainingTimeInMillis: () => 10000 };
const t0 = performance.now();
const mod = await import(file);
const t1 = performance.now();
let t2 = t1;
if (kind in events && typeof mod.handler === 'function') {
  try { await mod.handler(events[kind], context); } catch {}
  t2 = performance.now();
}
process.stdout.write(JSON.stringify({ load: t1 - t0, call: t2 - t1, handler: typeof mod.handler === 'function' }));
`;

/** What the composition root validates, with values that make every SDK call fail fast and locally. */
const CHILD_ENV = {
  PATH: process.env.PATH ?? '',
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
  AWS_MAX_ATTEMPTS: '1',
  RUNS_TABLE: 'bench-runs',
  DISPATCH_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111111111111/dispatch',
  RELAY_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111111111111/relay',
  ASSET_BUCKET: 'bench-assets',
  LOG_GROUP: 'bench-runs',
  LOG_LEVEL: 'SILENT',
};

interface Sample {
  readonly load: number;
  readonly call: number;
  readonly handler: boolean;
}

function sample(bundle: Bundle): Sample {
  const child = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', CHILD, pathToFileURL(bundle.file).href, bundle.kind],
    { env: CHILD_ENV, encoding: 'utf8' },
  );
  if (child.status !== 0) throw new Error(`${bundle.name}: ${child.stderr}`);
  return JSON.parse(child.stdout) as Sample;
}

/** Round-robin over the bundles, so load on the machine spreads evenly over all of them. */
function measureAll(bundles: readonly Bundle[]): Map<Bundle, Sample> {
  const samples = new Map<Bundle, Sample[]>(bundles.map((b) => [b, []]));
  for (let i = 0; i < RUNS; i++) {
    for (const b of bundles) samples.get(b)?.push(sample(b));
  }
  return new Map(
    bundles.map((b) => {
      const s = samples.get(b) ?? [];
      return [
        b,
        {
          load: median(s.map((x) => x.load)),
          call: median(s.map((x) => x.call)),
          handler: s[0]?.handler ?? false,
        },
      ];
    }),
  );
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

async function bundle(
  name: string,
  entry: string,
  kind: Kind,
  spec: Pick<HandlerSpec, 'controlsTasks'> = {},
): Promise<Bundle> {
  const file = join(out, name, 'index.mjs');
  // nodePaths: the floor entries are written outside the repository, and import the SDK from its node_modules.
  await build({
    ...esbuildOptionsFor(entry, file, spec),
    absWorkingDir: REPO,
    nodePaths: [join(REPO, 'node_modules')],
  });
  return { name, file, kind };
}

/** The AWS SDK clients each function's handler uses: what its floor bundle imports and constructs. */
const CLIENTS = {
  dynamodb: ['DynamoDBClient', '@aws-sdk/client-dynamodb'],
  sqs: ['SQSClient', '@aws-sdk/client-sqs'],
  s3: ['S3Client', '@aws-sdk/client-s3'],
  logs: ['CloudWatchLogsClient', '@aws-sdk/client-cloudwatch-logs'],
  ecs: ['ECSClient', '@aws-sdk/client-ecs'],
  secretsManager: ['SecretsManagerClient', '@aws-sdk/client-secrets-manager'],
} as const;
type Client = keyof typeof CLIENTS;

const TABLE: readonly Client[] = ['dynamodb'];
const USES: Readonly<Record<string, readonly Client[]>> = {
  Healthz: [],
  GetOpenapi: [],
  GetDiscovery: TABLE,
  RefreshDiscovery: TABLE,
  RefreshDiscoverySchedule: TABLE,
  PutTarget: TABLE,
  ListTargets: TABLE,
  GetTarget: TABLE,
  DeleteTarget: TABLE,
  GetInventory: TABLE,
  ListRuns: TABLE,
  GetRun: TABLE,
  GetBatch: TABLE,
  UploadAsset: ['s3'],
  ListAssets: ['s3'],
  // Secrets Manager only for runs that carry plaintext passwords: not in the floor.
  SubmitRun: ['dynamodb', 's3', 'sqs'],
  SubmitBatch: ['dynamodb', 's3', 'sqs'],
  RetryBatch: ['dynamodb', 's3', 'sqs'],
  GetRunLogs: ['dynamodb', 'logs'],
  CancelRun: ['dynamodb', 'ecs', 'secretsManager'],
  DispatchRuns: ['dynamodb', 'sqs', 's3', 'ecs', 'secretsManager'],
  SettleDeadLetters: ['dynamodb', 'secretsManager'],
  EcsTaskStateChange: ['dynamodb', 'ecs', 'secretsManager'],
  ReconcileRuns: ['dynamodb', 'sqs', 'ecs', 'secretsManager'],
  PollBackends: ['dynamodb', 'secretsManager'],
};

/** A handler that constructs `clients` on its first call and answers; with none, the empty bundle. */
function floorSource(clients: readonly Client[]): string {
  const imports = clients.map((c) => `import { ${CLIENTS[c][0]} } from '${CLIENTS[c][1]}';`);
  const made = clients.map((c) => `new ${CLIENTS[c][0]}({})`).join(', ');
  return `${imports.join('\n')}
let clients: unknown[] | undefined;
export const handler = async () => {
  clients ??= [${made}];
  return { statusCode: 200, body: String(clients.length) };
};
`;
}

const specs = new Map<string, { spec: HandlerSpec; kind: Kind }>();
for (const spec of Object.values(API_HANDLERS)) specs.set(spec.entry, { spec, kind: 'http' });
for (const spec of Object.values(WORKER_HANDLERS)) {
  specs.set(spec.entry, { spec, kind: spec.entry.startsWith('functions/dispatcher/') ? 'sqs' : 'other' });
}

/** KiB deployed: the entry file and every chunk beside it. */
const kib = (b: Bundle): number =>
  readdirSync(dirname(b.file), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((sum, e) => sum + statSync(join(e.parentPath, e.name)).size, 0) / 1024;
/** KiB of the entry file alone. */
const entryKib = (b: Bundle): number => statSync(b.file).size / 1024;

try {
  const floors = new Map<string, Bundle>();
  const pairs: { fn: Bundle; floor: Bundle; uses: readonly Client[] }[] = [];
  for (const { spec, kind } of specs.values()) {
    const name = constructIdOf(spec.entry);
    const uses = USES[name];
    if (uses === undefined) throw new Error(`${name}: say which AWS SDK clients it uses in USES`);
    // The floor is called like its function (same event kind), so both sides pay the same call overhead.
    const key = `${[...uses].sort().join('+') || 'empty'}:${kind}`;
    let floor = floors.get(key);
    if (floor === undefined) {
      const entry = join(out, `floor-${key.replace(/[^a-z0-9]+/gi, '-')}.ts`);
      writeFileSync(entry, floorSource(uses));
      floor = await bundle(`floor(${key})`, entry, kind);
      floors.set(key, floor);
    }
    pairs.push({ fn: await bundle(name, join(REPO, spec.entry), kind, spec), floor, uses });
  }
  const all = [...new Set([...floors.values(), ...pairs.map((p) => p.fn)])];
  const figures = measureAll(all);
  const total = (b: Bundle): number => {
    const m = figures.get(b);
    return m === undefined ? Number.NaN : m.load + m.call;
  };
  console.log(`Lambda bundles (esbuild as in infra/bundling.ts), median of ${RUNS} fresh node processes`);
  console.log(`node ${process.version} on ${process.platform}/${process.arch}\n`);
  const header = [
    'function',
    'KiB',
    'entry KiB',
    'load ms',
    'load+1st ms',
    'floor KiB',
    'floor ms',
    'ratio',
    'floor holds',
  ];
  const rows = pairs.map(({ fn, floor, uses }) => [
    figures.get(fn)?.handler === false ? `${fn.name} (no handler export)` : fn.name,
    kib(fn).toFixed(1),
    entryKib(fn).toFixed(1),
    (figures.get(fn)?.load ?? Number.NaN).toFixed(1),
    total(fn).toFixed(1),
    kib(floor).toFixed(1),
    total(floor).toFixed(1),
    (total(fn) / total(floor)).toFixed(2),
    uses.length === 0 ? 'nothing' : uses.join(', '),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === 0 || i === 8 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  console.log('');
  for (const { fn, floor, uses } of pairs) {
    reportFigure({
      figure: `Lambda load + first call, ${fn.name}`,
      now: total(fn),
      floor: total(floor),
      unit: 'ms',
      goal: uses.length === 0 && fn.name === 'Healthz' ? '≤ 3×' : '≤ 1.3×',
      note: `${kib(fn).toFixed(0)} KiB (entry ${entryKib(fn).toFixed(0)} KiB) vs a ${kib(floor).toFixed(0)} KiB floor (${uses.length === 0 ? 'an empty handler' : `constructs ${uses.join(', ')}`}); median of ${RUNS}`,
    });
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
