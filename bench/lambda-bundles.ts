/**
 * Size and module-load time of every Lambda bundle, bundled with esbuild
 * exactly as the CDK stack does (infra/bundling.ts), against a hello-world
 * handler bundled the same way on the same machine. Prints figures; asserts
 * nothing.
 *
 *   npx tsx bench/lambda-bundles.ts          # 11 fresh processes per bundle
 *   BENCH_RUNS=31 npx tsx bench/lambda-bundles.ts
 *
 * Per bundle, in a fresh `node` process each time (so nothing is cached):
 * - load: `await import(bundle)` — what a cold start pays before the handler runs;
 * - first call: the first invocation on top of that, with a harmless event
 *   (an API request without an authorizer → 401, an empty SQS batch). The
 *   handlers build the AWS composition root lazily on this first call, so
 *   load + first call is the cold start's code cost. SDK clients make no call.
 * Figures are medians. The machine is not Lambda: compare the ratios, not the
 * milliseconds.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { esbuildOptionsFor } from '../infra/bundling.ts';
import { API_HANDLERS, constructIdOf, type HandlerSpec, WORKER_HANDLERS } from '../infra/handlers.ts';

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

/** Runs in the child: import, then (optionally) one invocation; prints the two durations. */
const CHILD = `
const [file, kind] = process.argv.slice(1);
const events = { http: ${JSON.stringify(API_EVENT)}, sqs: ${JSON.stringify(SQS_EVENT)} };
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
  await build({ ...esbuildOptionsFor(entry, file, spec), absWorkingDir: REPO });
  return { name, file, kind };
}

const helloEntry = join(out, 'hello.ts');
writeFileSync(helloEntry, "export const handler = async () => ({ statusCode: 200, body: 'hello' });\n");

const specs = new Map<string, { spec: HandlerSpec; kind: Kind }>();
for (const spec of Object.values(API_HANDLERS)) specs.set(spec.entry, { spec, kind: 'http' });
for (const spec of Object.values(WORKER_HANDLERS)) {
  specs.set(spec.entry, { spec, kind: spec.entry.startsWith('functions/dispatcher/') ? 'sqs' : 'other' });
}

try {
  const hello = await bundle('HelloWorld', helloEntry, 'http');
  const bundles = [hello];
  for (const { spec, kind } of specs.values()) {
    bundles.push(await bundle(constructIdOf(spec.entry), join(REPO, spec.entry), kind, spec));
  }
  const figures = measureAll(bundles);
  const base = figures.get(hello) ?? { load: Number.NaN, call: Number.NaN, handler: false };
  const baseTotal = base.load + base.call;
  console.log(`Lambda bundles (esbuild as in infra/bundling.ts), median of ${RUNS} fresh node processes`);
  console.log(`node ${process.version} on ${process.platform}/${process.arch}\n`);
  const header = ['bundle', 'KiB', 'load ms', 'load ×hello', 'load+1st call ms', 'cold ×hello'];
  const rows: string[][] = [];
  for (const b of bundles) {
    const m = figures.get(b) ?? base;
    const total = m.load + m.call;
    rows.push([
      m.handler ? b.name : `${b.name} (no handler export)`,
      (statSync(b.file).size / 1024).toFixed(1),
      m.load.toFixed(1),
      (m.load / base.load).toFixed(1),
      total.toFixed(1),
      (total / baseTotal).toFixed(1),
    ]);
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
} finally {
  rmSync(out, { recursive: true, force: true });
}
