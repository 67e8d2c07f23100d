import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { deployedEnvironment } from './deployed-environment.ts';
import { SCHEDULED_EVENT, SQS_EVENT } from './lambda-events.ts';

/*
 * The child-process measurement of bench/lambda-bundles.ts: one fresh `node`
 * per sample, so nothing is cached between them.
 */

/** What a bundle's first call is: an API request, an SQS batch, an EventBridge event. */
export type Kind = 'http' | 'sqs' | 'other';
/** One built bundle: its entry file (`<dir>/index.mjs`, chunks beside it) and how it is called. */
export interface Bundle {
  readonly name: string;
  readonly file: string;
  readonly kind: Kind;
  /** The event of its first call, as JSON, when not its kind's (an API route's request, the ECS event). */
  readonly event?: string;
}

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

/**
 * The environment the stack deploys a function with (cdk.json's `dev`:
 * bench/support/deployed-environment.ts), with credentials and an endpoint
 * that make every SDK call fail fast and locally, and logging off (the child
 * answers on stdout). Also the environment test/infra/lambda-bundle.test.ts
 * runs the built assets in.
 */
export const CHILD_ENV = {
  ...deployedEnvironment(),
  PATH: process.env.PATH ?? '',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  // https, as every AWS endpoint a Lambda function calls: the SDK then imports node:https only. An http endpoint
  // made both sides import node:http too, whose ES module facade in Node 22 loads undici (its lazy WebSocket
  // exports): some 30 ms that Lambda never pays, added to the floor and the function alike. The connection is
  // refused before any TLS.
  AWS_ENDPOINT_URL: 'https://127.0.0.1:9',
  AWS_MAX_ATTEMPTS: '1',
  LOG_LEVEL: 'SILENT',
};

export interface Sample {
  readonly load: number;
  readonly call: number;
  readonly handler: boolean;
  /** What the first call answered: an HTTP status, `ok` / `failures n` for SQS, `threw …`. */
  readonly status: string;
  /** Connections the process opened (each SDK call to the refused endpoint opens one). */
  readonly connects: number;
}

export function sample(bundle: Bundle): Sample {
  const child = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', CHILD, pathToFileURL(bundle.file).href, bundle.kind, bundle.event ?? ''],
    { env: CHILD_ENV, encoding: 'utf8' },
  );
  if (child.status !== 0) throw new Error(`${bundle.name}: ${child.stderr}`);
  return JSON.parse(child.stdout) as Sample;
}

/** What was measured of one pair: its samples' medians, and the ratio of the two measured in pairs. */
export interface PairSamples<P> {
  readonly pair: P;
  /** Medians of the function's samples (load and first call each). */
  readonly fn: Sample;
  /** Medians of the floor's samples taken beside this function. */
  readonly floor: Sample;
  /** The median over rounds of the function's load + first call over the floor's, timed back to back. */
  readonly ratio: number;
}

/**
 * Each round samples every pair back to back — the function, then its floor,
 * or the floor first on odd rounds — and the ratio is the median of the
 * rounds' ratios. Before, every bundle was one more stop of a round-robin
 * and each ratio was two medians divided: a floor that ten functions share
 * was sampled 11 times, and its one median moved all ten ratios together.
 * The same code gave the one-client table routes 1.16–1.41 in one run and
 * 1.17–1.31 in the next, while the floor's median went from 71 to 88 ms
 * between the runs: this machine's speed drifts from minute to minute.
 */
export function measurePairs<P extends { readonly fn: Bundle; readonly floor: Bundle }>(
  pairs: readonly P[],
  runs: number,
): PairSamples<P>[] {
  const taken = pairs.map((pair) => ({
    pair,
    fn: [] as Sample[],
    floor: [] as Sample[],
    ratios: [] as number[],
  }));
  const total = (s: Sample): number => s.load + s.call;
  for (let round = 0; round < runs; round++) {
    for (const { pair, fn, floor, ratios } of taken) {
      let f: Sample;
      let g: Sample;
      if (round % 2 === 0) {
        f = sample(pair.fn);
        g = sample(pair.floor);
      } else {
        g = sample(pair.floor);
        f = sample(pair.fn);
      }
      fn.push(f);
      floor.push(g);
      ratios.push(total(f) / total(g));
    }
  }
  return taken.map(({ pair, fn, floor, ratios }) => ({
    pair,
    fn: summary(fn),
    floor: summary(floor),
    ratio: median(ratios),
  }));
}

/** The medians of a bundle's samples; status and connections from the first. */
function summary(s: readonly Sample[]): Sample {
  return {
    load: median(s.map((x) => x.load)),
    call: median(s.map((x) => x.call)),
    handler: s[0]?.handler ?? false,
    status: s[0]?.status ?? '',
    connects: s[0]?.connects ?? 0,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}
