import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiEvent, SCHEDULED_EVENT } from '../../bench/support/lambda-events.ts';
import { CHILD_ENV } from '../../bench/support/lambda-measure.ts';
import { DEFAULT_MEMORY_MIB } from '../../infra/constructs/handler-function.ts';
import { API_HANDLERS, constructIdOf, type HandlerSpec, WORKER_HANDLERS } from '../../infra/handlers.ts';
import { buildLambdaBundle, type LambdaBundle } from '../../infra/lambda-bundle.ts';
import { REPO } from './synth.ts';

/*
 * The assets the stack deploys, as infra/lambda-bundle.ts builds them
 * (esbuild, then rolldown grouping what a cold start loads), run as Lambda
 * runs them: plain node, no loader, a fresh process each. What each bundle
 * holds is checked on esbuild's metafile (bundle-contents.test.ts); this
 * checks the files a cold start reads and that the rewritten code still
 * answers. No timing: the cold-start figures are bench/lambda-bundles.ts.
 */

const SPECS = new Map<string, HandlerSpec>(
  [...Object.values(API_HANDLERS), ...Object.values(WORKER_HANDLERS)].map((s) => [constructIdOf(s.entry), s]),
);

mkdirSync(join(REPO, 'dist'), { recursive: true });
const scratch = mkdtempSync(join(REPO, 'dist', 'lambda-bundle-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * Runs in the child: records every file Node loads (a module hook), imports
 * the bundle, makes one call and prints what was loaded and answered.
 */
const CHILD = `
import { register } from 'node:module';
const { port1, port2 } = new MessageChannel();
const loaded = [];
port1.on('message', (url) => loaded.push(url));
port1.unref();
register('data:text/javascript,' + encodeURIComponent(
  'let port; export function initialize(d) { port = d.port; }' +
  'export async function load(url, context, next) { if (url.startsWith("file:")) port.postMessage(url); return next(url, context); }'),
  { data: { port: port2 }, transferList: [port2] });
const [file, eventJson] = process.argv.slice(1);
const mod = await import(file);
let answer;
try {
  const out = await mod.handler(JSON.parse(eventJson), { awsRequestId: 'req-1', getRemainingTimeInMillis: () => 10000 });
  answer = out?.statusCode ?? (out?.batchItemFailures === undefined ? 'ok' : 'failures ' + out.batchItemFailures.length);
} catch (error) { answer = 'threw ' + error.name; }
await new Promise((r) => setTimeout(r, 50));
process.stdout.write(JSON.stringify({ loaded, answer }));
`;

/** Each function's first event, as the cold-start bench sends it: a valid request, a scheduled event. */
const FUNCTIONS: Record<string, unknown> = {
  Healthz: apiEvent('GET /healthz'),
  PutTarget: apiEvent('PUT /targets/{id}'),
  GetRunLogs: apiEvent('GET /runs/{id}/logs'),
  SubmitRun: apiEvent('POST /runs'),
  PollBackends: SCHEDULED_EVENT,
  RefreshDiscovery: apiEvent('POST /discovery/refresh'),
};

const built = new Map<string, { dir: string; bundle: LambdaBundle }>();
beforeAll(async () => {
  for (const name of Object.keys(FUNCTIONS)) {
    const spec = SPECS.get(name);
    if (spec === undefined) throw new Error(`no handler spec for ${name}`);
    const dir = join(scratch, name);
    built.set(name, {
      dir,
      bundle: await buildLambdaBundle(resolve(REPO, spec.entry), join(dir, 'index.mjs'), spec, {
        absWorkingDir: REPO,
      }),
    });
  }
}, 240_000);

const of = (name: string) => {
  const b = built.get(name);
  if (b === undefined) throw new Error(`${name} was not built`);
  return b;
};

function coldStart(name: string): { loaded: string[]; answer: string } {
  const { dir } = of(name);
  const printed = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      CHILD,
      pathToFileURL(join(dir, 'index.mjs')).href,
      JSON.stringify(FUNCTIONS[name]),
    ],
    { env: CHILD_ENV, encoding: 'utf8', timeout: 60_000 },
  );
  const { loaded, answer } = JSON.parse(printed) as { loaded: string[]; answer: string };
  return { loaded: loaded.map((url) => relative(dir, fileURLToPath(url))).sort(), answer: String(answer) };
}

describe('Lambda assets (infra/lambda-bundle.ts)', () => {
  it('writes what it reports: the entry and its chunks, and nothing else in the asset directory', () => {
    for (const name of Object.keys(FUNCTIONS)) {
      const { dir, bundle } = of(name);
      const onDisk = readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => relative(dir, join(e.parentPath, e.name)))
        .sort();
      expect(onDisk, name).toEqual([...bundle.files].sort());
    }
  });

  it('Healthz is one file and loads nothing else', () => {
    expect(of('Healthz').bundle.files).toEqual(['index.mjs']);
    expect(coldStart('Healthz')).toEqual({ loaded: ['index.mjs'], answer: '200' });
  });

  it.each(['PutTarget', 'GetRunLogs', 'SubmitRun'])(
    '%s: a cold start reads the entry and two chunks, the files the build reports, and the first call answers',
    (name) => {
      const { bundle } = of(name);
      const { loaded, answer } = coldStart(name);

      expect(bundle.firstCallFiles).toHaveLength(3);
      expect(loaded).toEqual([...bundle.firstCallFiles].sort());
      // The refused endpoint fails the route's first DynamoDB call: a problem+json 500, not a crash at load.
      expect(answer).toBe('500');
      // Everything else stays on disk until its code runs (SDK clients, adapters, task preparation).
      expect(bundle.files.length).toBeGreaterThan(loaded.length);
    },
    60_000,
  );

  it('PollBackends with nothing to poll answers without loading its composition, as before the grouping', () => {
    const { bundle } = of('PollBackends');
    const { loaded, answer } = coldStart('PollBackends');

    expect(answer).toBe('ok');
    expect(loaded).toEqual(bundle.firstCallFiles.filter((f) => !f.includes('first-call')).sort());
    expect(bundle.firstCallFiles.some((f) => f.includes('first-call'))).toBe(true);
  }, 60_000);

  /*
   * The most a function's code takes: its entry and then every chunk, each of
   * which loads only when its code runs (a cloud's launcher, a cloud's VM
   * listing). That must leave at least half the function's memory for its
   * work. GCE's listing alone once took 320 MB here: the package's index
   * with all its clients, before shared/adapters/gce/vm-discovery.ts imported
   * the instances client by itself.
   */
  const LOAD_ALL = `
import { readdirSync } from 'node:fs';
const [dir] = process.argv.slice(1);
await import(dir + '/index.mjs');
for (const file of readdirSync(dir + '/chunks')) await import(dir + '/chunks/' + file);
process.stdout.write(String(process.memoryUsage().rss));
`;
  it.each(['GetRunLogs', 'PollBackends', 'RefreshDiscovery'])(
    '%s with every cloud SDK it may load, loaded at once, uses less than half its memory',
    (name) => {
      const memoryMiB = SPECS.get(name)?.memoryMiB ?? DEFAULT_MEMORY_MIB;
      const rss = Number(
        execFileSync(process.execPath, ['--input-type=module', '-e', LOAD_ALL, of(name).dir], {
          env: CHILD_ENV,
          encoding: 'utf8',
          timeout: 60_000,
        }),
      );

      expect(of(name).bundle.files.length).toBeGreaterThan(10);
      expect(rss / 2 ** 20).toBeGreaterThan(60); // it did load: node alone is about 45
      expect(rss / 2 ** 20).toBeLessThan(memoryMiB / 2);
    },
    60_000,
  );
});
