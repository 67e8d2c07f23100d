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
 * - first call: the first invocation on top of that, with the event a real
 *   request brings: an API request as API Gateway's JWT authorizer passes it
 *   (`requestContext.authorizer.jwt.claims.sub`), with the route's method,
 *   path parameters and a valid body, so the handler authenticates,
 *   validates and reaches its first SDK call (an unauthenticated request
 *   would answer 401 before building the route's work); an SQS batch of one
 *   run message; an ECS task state change for EcsTaskStateChange; a
 *   scheduled event for the other EventBridge functions. The handlers build their composition on
 *   this first call. Every SDK call goes to a refused local port and fails
 *   at once (one attempt), and the status each function answered is printed.
 * - the floor, per function: a bundle that imports and constructs that
 *   function's SDK clients on its first call and, when the function's first
 *   call opened a connection (counted in a warm-up run), makes one call with
 *   its first client (DynamoDB GetItem, or S3 ListObjectsV2 for the asset
 *   routes) to the same refused port, so both sides pay the SDK's
 *   first-request cost (credentials, endpoint, signing, the HTTP agent).
 *   Healthz and GetOpenapi: an empty handler.
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
  /** The event of its first call, as JSON, when not its kind's (an API route's request, the ECS event). */
  readonly event?: string;
}

/** The caller as API Gateway's JWT authorizer hands it to the function (shared/http/api-gateway-auth.ts). */
const AUTHORIZER = { jwt: { claims: { sub: 'bench' }, scopes: [] } };

/** A valid body for each route that takes one, so the request gets past validation to the route's work. */
const BODIES: Readonly<Record<string, unknown>> = {
  'PUT /targets/{id}': { kind: 'vm', cloud: 'aws', name: 'bench', address: '10.0.0.1', connection: 'ssh' },
  'POST /runs': { kind: 'vm', targetId: 'bench', asset: 'hello/site.yml' },
  'POST /batches': { kind: 'vm', targetIds: ['bench'], asset: 'hello/site.yml' },
  'POST /assets': { path: 'bench/site.yml', contentBase64: Buffer.from('- hosts: all\n').toString('base64') },
};

/** An authenticated API Gateway (HTTP API, payload 2.0) request for `route` ('GET /runs/{id}'). */
function apiEvent(route: string): Record<string, unknown> {
  const [method = 'GET', template = '/'] = route.split(' ');
  const path = template.replaceAll(/\{[^}]+\}/g, 'bench');
  const body = BODIES[route];
  return {
    version: '2.0',
    routeKey: route,
    rawPath: path,
    rawQueryString: '',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(template.includes('{id}') ? { pathParameters: { id: 'bench' } } : {}),
    requestContext: {
      http: { method, path, sourceIp: '127.0.0.1' },
      requestId: 'bench',
      authorizer: AUTHORIZER,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    isBase64Encoded: false,
  };
}

/**
 * EcsTaskStateChange: the event its EventBridge rule passes (a task of ours, by
 * its group `rw:<runId>:<attempt>`), so it reads the run as a real one does.
 */
const ECS_TASK_EVENT = {
  version: '0',
  id: 'bench',
  'detail-type': 'ECS Task State Change',
  source: 'aws.ecs',
  account: '111111111111',
  time: '2026-01-01T00:00:00Z',
  region: 'eu-west-1',
  resources: [],
  detail: {
    taskArn: 'arn:aws:ecs:eu-west-1:111111111111:task/bench/0123456789abcdef0123456789abcdef',
    clusterArn: 'arn:aws:ecs:eu-west-1:111111111111:cluster/bench',
    lastStatus: 'RUNNING',
    version: 2,
    group: 'rw:01JBENCH0000000000000000RN:1',
  },
};

/** One run message, as the dispatch queue (and its dead-letter queue) delivers it. */
const SQS_EVENT = {
  Records: [
    {
      messageId: 'bench',
      receiptHandle: 'bench',
      body: JSON.stringify({ runId: '01JBENCH0000000000000000RN' }),
      attributes: { ApproximateReceiveCount: '1' },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:eu-west-1:111111111111:dispatch',
      awsRegion: 'eu-west-1',
    },
  ],
};
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

/**
 * Runs in the child: import, then (optionally) one invocation; prints the two
 * durations, the status answered and the connections opened (counted at
 * net.Socket#connect, the same few instructions on both sides).
 */
const CHILD = `
import net from 'node:net';
const [file, kind, eventJson] = process.argv.slice(1);
let connects = 0;
const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) { connects++; return connect.apply(this, args); };
const events = { sqs: ${JSON.stringify(SQS_EVENT)}, other: ${JSON.stringify(SCHEDULED_EVENT)} };
const event = eventJson ? JSON.parse(eventJson) : events[kind];
const context = { functionName: 'bench', awsRequestId: 'bench', getRemainingTimeInMillis: () => 10000 };
const t0 = performance.now();
const mod = await import(file);
const t1 = performance.now();
let t2 = t1;
let status = 'no call';
if (event !== undefined && typeof mod.handler === 'function') {
  try {
    const answer = await mod.handler(event, context);
    status = String(answer?.statusCode ?? (answer?.batchItemFailures === undefined ? 'ok' : 'failures ' + answer.batchItemFailures.length));
  } catch (error) { status = 'threw ' + (error?.name ?? 'error'); }
  t2 = performance.now();
}
process.stdout.write(JSON.stringify({ load: t1 - t0, call: t2 - t1, handler: typeof mod.handler === 'function', status, connects }));
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
  /** What the first call answered: an HTTP status, `ok` / `failures n` for SQS, `threw …`. */
  readonly status: string;
  /** Connections the process opened (each SDK call to the refused endpoint opens one). */
  readonly connects: number;
}

function sample(bundle: Bundle): Sample {
  const child = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', CHILD, pathToFileURL(bundle.file).href, bundle.kind, bundle.event ?? ''],
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
          status: s[0]?.status ?? '',
          connects: s[0]?.connects ?? 0,
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
  spec: Pick<HandlerSpec, 'controlsTasks' | 'discoversVms'> = {},
  event?: string,
): Promise<Bundle> {
  const file = join(out, name, 'index.mjs');
  // nodePaths: the floor entries are written outside the repository, and import the SDK from its node_modules.
  await build({
    ...esbuildOptionsFor(entry, file, spec),
    absWorkingDir: REPO,
    nodePaths: [join(REPO, 'node_modules')],
  });
  return { name, file, kind, ...(event === undefined ? {} : { event }) };
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

/**
 * The one call a floor makes when its function's first call reaches AWS: with
 * the function's first client, to the same refused endpoint.
 */
const FIRST_CALLS: Partial<Record<Client, readonly [command: string, input: string]>> = {
  dynamodb: [
    'GetItemCommand',
    "{ TableName: 'bench-runs', Key: { pk: { S: 'bench' }, sk: { S: 'bench' } } }",
  ],
  s3: ['ListObjectsV2Command', "{ Bucket: 'bench-assets' }"],
};

/**
 * A handler that constructs `clients` on its first call and, with `call`,
 * sends one request with the first of them (which fails: the endpoint
 * refuses); with no clients, the empty bundle.
 */
function floorSource(clients: readonly Client[], call: boolean): string {
  const first = clients[0];
  const request = call && first !== undefined ? FIRST_CALLS[first] : undefined;
  if (call && request === undefined) throw new Error(`no first call for a floor over ${first ?? 'nothing'}`);
  const imports = clients.map((c, i) =>
    i === 0 && request !== undefined
      ? `import { ${CLIENTS[c][0]}, ${request[0]} } from '${CLIENTS[c][1]}';`
      : `import { ${CLIENTS[c][0]} } from '${CLIENTS[c][1]}';`,
  );
  const made = clients.map((c) => `new ${CLIENTS[c][0]}({})`).join(', ');
  const send =
    request === undefined
      ? ''
      : `\n  try { await (clients[0] as any).send(new ${request[0]}(${request[1]})); } catch {}`;
  return `${imports.join('\n')}
let clients: unknown[] | undefined;
export const handler = async () => {
  clients ??= [${made}];${send}
  return { statusCode: 200, body: String(clients.length) };
};
`;
}

const specs = new Map<string, { spec: HandlerSpec; kind: Kind; event?: string }>();
for (const [route, spec] of Object.entries(API_HANDLERS)) {
  specs.set(spec.entry, { spec, kind: 'http', event: JSON.stringify(apiEvent(route)) });
}
for (const spec of Object.values(WORKER_HANDLERS)) {
  const kind = spec.entry.startsWith('functions/dispatcher/') ? 'sqs' : 'other';
  const event = spec === WORKER_HANDLERS.EcsTaskStateChange ? JSON.stringify(ECS_TASK_EVENT) : undefined;
  specs.set(spec.entry, { spec, kind, ...(event === undefined ? {} : { event }) });
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
  const pairs: { fn: Bundle; floor: Bundle; uses: readonly Client[]; calls: boolean }[] = [];
  for (const { spec, kind, event } of specs.values()) {
    const name = constructIdOf(spec.entry);
    const uses = USES[name];
    if (uses === undefined) throw new Error(`${name}: say which AWS SDK clients it uses in USES`);
    const fn = await bundle(name, join(REPO, spec.entry), kind, spec, event);
    // A warm-up run (not measured) says whether the first call reaches AWS; the floor then does too.
    const calls = uses.length > 0 && sample(fn).connects > 0;
    // The floor is called like its function (same event kind), so both sides pay the same call overhead.
    const key = `${[...uses].sort().join('+') || 'empty'}:${kind}${calls ? ':call' : ''}`;
    let floor = floors.get(key);
    if (floor === undefined) {
      const entry = join(out, `floor-${key.replace(/[^a-z0-9]+/gi, '-')}.ts`);
      writeFileSync(entry, floorSource(uses, calls));
      floor = await bundle(`floor(${key})`, entry, kind, {}, event);
      floors.set(key, floor);
    }
    pairs.push({ fn, floor, uses, calls });
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
    'answered',
    'conns',
    'floor holds',
  ];
  const rows = pairs.map(({ fn, floor, uses, calls }) => [
    figures.get(fn)?.handler === false ? `${fn.name} (no handler export)` : fn.name,
    kib(fn).toFixed(1),
    entryKib(fn).toFixed(1),
    (figures.get(fn)?.load ?? Number.NaN).toFixed(1),
    total(fn).toFixed(1),
    kib(floor).toFixed(1),
    total(floor).toFixed(1),
    (total(fn) / total(floor)).toFixed(2),
    figures.get(fn)?.status ?? '',
    `${figures.get(fn)?.connects ?? 0}/${figures.get(floor)?.connects ?? 0}`,
    `${uses.length === 0 ? 'nothing' : uses.join(', ')}${calls ? ` (+1 ${FIRST_CALLS[uses[0] ?? 'dynamodb']?.[0]})` : ''}`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === 0 || i >= 8 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  console.log('');
  console.log("answered: the first call's status; conns: connections opened by the function / its floor\n");
  for (const { fn, floor, uses, calls } of pairs) {
    reportFigure({
      figure: `Lambda load + first call, ${fn.name}`,
      now: total(fn),
      floor: total(floor),
      unit: 'ms',
      goal: uses.length === 0 && fn.name === 'Healthz' ? '≤ 3×' : '≤ 1.3×',
      note: `${kib(fn).toFixed(0)} KiB (entry ${entryKib(fn).toFixed(0)} KiB) vs a ${kib(floor).toFixed(0)} KiB floor (${uses.length === 0 ? 'an empty handler' : `constructs ${uses.join(', ')}${calls ? ', one failing call' : ''}`}); first call answered ${figures.get(fn)?.status}; median of ${RUNS}`,
    });
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
