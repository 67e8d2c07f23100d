/**
 * Local-mode latency and throughput with a no-op executor, so the figures are
 * the control plane's own cost (HTTP, SQLite, dispatcher, relay claim), not
 * ansible-playbook's. Prints figures; asserts nothing.
 *
 *   npm run bench            # defaults: 50 sequential runs, 300 concurrent runs
 *   BENCH_RUNS=200 npm run bench
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startLocalMode } from '../bin/local-mode/local-mode.ts';
import { LOCALHOST_TARGET } from './support/localhost-target.ts';
import { noopExecutor } from './support/noop-executor.ts';
import { quantile } from './support/stats.ts';

const REPO = resolve(import.meta.dirname, '..');
const started = new Map<string, number>();

const executor = noopExecutor(started);

const dataDir = mkdtempSync(join(tmpdir(), 'rw-bench-'));
const local = await startLocalMode({
  cwd: REPO,
  executor,
  env: {
    PORT: '0',
    REMOTE_WORKER_DATA_DIR: dataDir,
    REMOTE_WORKER_TOKEN: 'bench',
    LOG_LEVEL: 'ERROR',
    RELAY_CONCURRENCY: '8',
  },
});
const headers = { authorization: 'Bearer bench', 'content-type': 'application/json' };
const call = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(local.url + path, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await res.json()) as { id: string; state: string };
};
await call('PUT', '/targets/localhost', LOCALHOST_TARGET);
const runBody = { kind: 'vm', targetId: 'localhost', asset: 'hello/site.yml' };

async function waitStarted(ids: readonly string[]): Promise<void> {
  while (ids.some((id) => !started.has(id))) await new Promise((r) => setTimeout(r, 2));
}

// 1. Latency: one run at a time, from the 202 arriving to the executor's start.
const sequential = Number(process.env.BENCH_SEQUENTIAL ?? 50);
const latencies: number[] = [];
for (let i = 0; i < sequential; i++) {
  const run = await call('POST', '/runs', runBody);
  const accepted = performance.now();
  await waitStarted([run.id]);
  latencies.push((started.get(run.id) ?? accepted) - accepted);
}

// 2. Throughput: submit many at once, time until every run is terminal.
const total = Number(process.env.BENCH_RUNS ?? 300);
const t0 = performance.now();
const ids = await Promise.all(
  Array.from({ length: total }, async () => (await call('POST', '/runs', runBody)).id),
);
const submittedMs = performance.now() - t0;
// Every run must be terminal.
let pending = ids.length;
while (pending > 0) {
  const states = await Promise.all(ids.map(async (id) => (await call('GET', `/runs/${id}`)).state));
  pending = states.filter((s) => s !== 'succeeded').length;
  if (pending > 0) await new Promise((r) => setTimeout(r, 50));
}
const totalMs = performance.now() - t0;

console.log(`local mode, no-op executor, ${process.version}, SQLite synchronous=FULL`);
console.log(
  `accepted → executor start (n=${sequential}): median ${quantile(latencies, 0.5).toFixed(1)} ms, p90 ${quantile(latencies, 0.9).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`,
);
console.log(
  `submit ${total} runs concurrently: ${submittedMs.toFixed(0)} ms (${((total / submittedMs) * 1000).toFixed(0)} accepted/s)`,
);
console.log(
  `all ${total} runs succeeded after ${totalMs.toFixed(0)} ms: ${((total / totalMs) * 1000).toFixed(1)} runs/s end to end`,
);

await local.close({ drainMs: 1000 });
rmSync(dataDir, { recursive: true, force: true });
