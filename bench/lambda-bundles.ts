/**
 * Cold start of every Lambda bundle, bundled exactly as the CDK stack does
 * (infra/lambda-bundle.ts: esbuild, then what a cold start loads grouped
 * into two chunks), each against its floor: a bundle, built the
 * same way in the same run, that imports and constructs only the AWS SDK
 * clients that handler uses (Healthz and the other routes that use none: an
 * empty handler). Prints a table and one figure per function
 * (bench/support/figures.ts `reportFigure`); asserts nothing.
 *
 *   npx tsx bench/lambda-bundles.ts          # 21 rounds: 21 fresh processes per function and 21 for its floor
 *                                            # (at 11 a ratio moved by about 0.1 from run to run; at 21–31, 0.05)
 *   BENCH_RUNS=31 npx tsx bench/lambda-bundles.ts
 *   BENCH_ONLY=GetRunLogs,GetDiscovery npx tsx bench/lambda-bundles.ts   # only the functions named
 *
 * Bundles are code-split as deployed: `index.mjs` with its chunks beside it
 * under `chunks/`, the function's asset directory. Per bundle, in a fresh
 * `node` process each time (so nothing is cached), with the environment the
 * stack deploys the function with (cdk.json's `dev`, runner settings
 * included: bench/support/deployed-environment.ts):
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
 *   this first call. Every SDK call goes to a refused local port (https, as AWS's are) and fails
 *   at once (one attempt), and the status each function answered is printed.
 * - the floor, per function: a bundle that imports and constructs that
 *   function's SDK clients on its first call and, when the function's first
 *   call opened a connection (counted in a warm-up run), makes one call with
 *   its first client (DynamoDB GetItem, or S3 ListObjectsV2 for the asset
 *   routes) to the same refused port, so both sides pay the SDK's
 *   first-request cost (credentials, endpoint, signing, the HTTP agent).
 *   Healthz and GetOpenapi: an empty handler.
 * Each round samples every function back to back with its floor (which goes
 * first alternates by round), so load on the machine and its drift fall on
 * both sides alike; the ratio is the median of the rounds' ratios, the
 * milliseconds are medians (bench/support/lambda-measure.ts `measurePairs`).
 * The machine is not Lambda: compare the ratios, not the milliseconds.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { API_HANDLERS, constructIdOf, type HandlerSpec, WORKER_HANDLERS } from '../infra/handlers.ts';
import { buildLambdaBundle } from '../infra/lambda-bundle.ts';
import { apiEvent, ECS_TASK_EVENT } from './support/lambda-events.ts';
import { floorSource, USES } from './support/lambda-floors.ts';
import { type Bundle, type Kind, measurePairs, sample } from './support/lambda-measure.ts';
import { type Pair, printFigures } from './support/lambda-table.ts';

const REPO = resolve(import.meta.dirname, '..');
const RUNS = Number(process.env.BENCH_RUNS ?? 21);
const ONLY = process.env.BENCH_ONLY?.split(',').map((name) => name.trim());
const out = mkdtempSync(join(tmpdir(), 'rw-lambda-bundles-'));

async function bundle(
  name: string,
  entry: string,
  kind: Kind,
  spec: Pick<HandlerSpec, 'controlsTasks' | 'discoversVms'> = {},
  event?: string,
): Promise<Bundle> {
  const file = join(out, name, 'index.mjs');
  // nodePaths: the floor entries are written outside the repository, and import the SDK from its node_modules.
  await buildLambdaBundle(entry, file, spec, {
    absWorkingDir: REPO,
    nodePaths: [join(REPO, 'node_modules')],
  });
  return { name, file, kind, ...(event === undefined ? {} : { event }) };
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

try {
  const floors = new Map<string, Bundle>();
  const pairs: Pair[] = [];
  for (const { spec, kind, event } of specs.values()) {
    const name = constructIdOf(spec.entry);
    if (ONLY !== undefined && !ONLY.includes(name)) continue;
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
  printFigures(measurePairs(pairs, RUNS), RUNS);
} finally {
  rmSync(out, { recursive: true, force: true });
}
