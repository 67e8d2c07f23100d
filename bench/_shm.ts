/**
 * Local-mode latency and throughput with a no-op executor, so the figures are
 * the control plane's own cost (HTTP, SQLite, dispatcher, relay claim), not
 * ansible-playbook's. Local mode runs in a process of its own
 * (local-process.ts), as the floor does, so the bench's HTTP client
 * shares the thread of neither. Each figure is beside a floor measured in the same run against a
 * process that only answers HTTP and commits one row per request to a
 * better-sqlite3 WAL database with synchronous=FULL (bench/support/floor-server.mjs):
 * - POST sent → executor start, one run at a time, against one HTTP round trip + one durable commit
 *   (the two alternate, so load from outside the bench weighs on both alike);
 * - runs/s end to end (submitted at once, until every run succeeded) against (HTTP request + commit)/s at
 *   the same concurrency, in rounds that alternate the two (BENCH_THROUGHPUT_ROUNDS, default 5): the
 *   round with the median ratio.
 * Prints figures; asserts nothing.
 *
 *   npm run bench            # defaults: 50 sequential runs, 300 concurrent runs
 *   BENCH_RUNS=200 npm run bench
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { reportFigure } from './support/figures.ts';
import { REPO, startFloor, startListening } from './support/listening-process.ts';
import { LOCALHOST_TARGET } from './support/localhost-target.ts';
import { quantile } from './support/stats.ts';

const sequential = Number(process.env.BENCH_SEQUENTIAL ?? 50);
const total = Number(process.env.BENCH_RUNS ?? 300);
const WARM_UP = 10;

const dataDir = mkdtempSync(join(tmpdir(), 'rw-bench-'));
const floorDir = mkdtempSync(join(tmpdir(), 'rw-bench-floor-'));
if (process.env.SHM) { const { symlinkSync } = await import('node:fs'); symlinkSync(mkdtempSync('/dev/shm/rw-'), join(dataDir, 'work')); }
// Local mode in its own process, as the floor is (local-process.ts), so neither shares the bench client's thread.
const local = await startListening(['--import', 'tsx', resolve(REPO, 'bench/local-process.ts')], {
  PORT: '0',
  REMOTE_WORKER_DATA_DIR: dataDir,
  REMOTE_WORKER_TOKEN: 'bench',
  LOG_LEVEL: 'ERROR',
  RELAY_CONCURRENCY: '8',
});
// Task starts as the server reports them, on the clock both processes share.
const started = new Map<string, number>();
const startWaiters = new Map<string, () => void>();
let pendingLine = '';
local.proc.stderr?.on('data', (chunk: Buffer) => {
  const lines = (pendingLine + chunk.toString()).split('\n');
  pendingLine = lines.pop() ?? '';
  for (const line of lines) {
    const m = /^started (\S+) ([\d.]+)$/.exec(line);
    if (m?.[1] === undefined || m[2] === undefined) continue;
    started.set(m[1], Number(m[2]));
    startWaiters.get(m[1])?.();
  }
});
const now = () => performance.timeOrigin + performance.now();
const floor = await startFloor(floorDir);
// A second, read-only connection: counting finished runs must not cost the API requests.
const reader = new Database(join(dataDir, 'remote-worker.db'), { readonly: true });
const succeeded = reader.prepare<[], { n: number }>(
  "SELECT COUNT(*) AS n FROM runs WHERE state = 'succeeded'",
);
const stateOf = reader.prepare<[string], string>('SELECT state FROM runs WHERE id = ?').pluck();

const headers = { authorization: 'Bearer bench', 'content-type': 'application/json' };
const call = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(local.url + path, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await res.json()) as { id: string; state: string };
};
const commitOnFloor = async () => {
  const res = await fetch(`${floor.url}/`, { method: 'POST', headers, body: JSON.stringify(runBody) });
  await res.arrayBuffer();
};
await call('PUT', '/targets/localhost', LOCALHOST_TARGET);
const runBody = { kind: 'vm', targetId: 'localhost', asset: 'hello/site.yml' };

async function waitStarted(id: string): Promise<number> {
  const at = started.get(id);
  if (at !== undefined) return at;
  await new Promise<void>((resolve) => startWaiters.set(id, resolve));
  startWaiters.delete(id);
  return started.get(id) ?? Number.NaN;
}

/** Until the run has succeeded, so the next sample (local or floor) does not share the machine with its end. */
async function waitSucceeded(id: string): Promise<void> {
  while (stateOf.get(id) !== 'succeeded') await new Promise((r) => setTimeout(r, 1));
}

// 1. Latency, one run at a time: from just before the POST is sent to the executor's start. Each run is
// followed by one floor commit, so a burst of load from outside the bench weighs on both figures alike.
const latencies: number[] = [];
const floorLatencies: number[] = [];
for (let i = 0; i < WARM_UP + sequential; i++) {
  const sent = now();
  const run = await call('POST', '/runs', runBody);
  const at = await waitStarted(run.id);
  await waitSucceeded(run.id);
  const floorSent = performance.now();
  await commitOnFloor();
  const floorMs = performance.now() - floorSent;
  if (i >= WARM_UP) {
    latencies.push(at - sent);
    floorLatencies.push(floorMs);
  }
}

// 2. Throughput: submit many at once, until every run has succeeded; then as many floor commits at once.
// Rounds alternate the two, so a slow spell of the disk (whose fsyncs both wait on) weighs on both alike;
// the figure is the round with the median ratio.
const rounds = Number(process.env.BENCH_THROUGHPUT_ROUNDS ?? 5);
const throughput: { local: number; floor: number }[] = [];
for (let round = 0; round < rounds; round++) {
  const before = succeeded.get()?.n ?? 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: total }, () => call('POST', '/runs', runBody)));
  while ((succeeded.get()?.n ?? 0) - before < total) await new Promise((r) => setTimeout(r, 2));
  const local = (total / (performance.now() - t0)) * 1000;
  const f0 = performance.now();
  await Promise.all(Array.from({ length: total }, commitOnFloor));
  throughput.push({ local, floor: (total / (performance.now() - f0)) * 1000 });
}
const byRatio = [...throughput].sort((a, b) => a.local / a.floor - b.local / b.floor);
const medianRound = byRatio[Math.floor((byRatio.length - 1) / 2)] ?? { local: Number.NaN, floor: Number.NaN };
const ratios = byRatio.map((r) => (r.local / r.floor).toFixed(2)).join(', ');

reportFigure({
  figure: 'local mode: POST sent → executor start (no-op executor)',
  now: quantile(latencies, 0.5),
  floor: quantile(floorLatencies, 0.5),
  unit: 'ms',
  goal: '≤ 1.5×',
  note: `median of ${sequential} (p90 ${quantile(latencies, 0.9).toFixed(1)} ms); floor: one HTTP round trip + one durable SQLite commit (p90 ${quantile(floorLatencies, 0.9).toFixed(1)} ms)`,
});
reportFigure({
  figure: 'local mode runs/s end to end (no-op)',
  now: medianRound.local,
  floor: medianRound.floor,
  unit: 'runs/s',
  goal: '≥ 0.5',
  note: `${total} runs submitted at once until all succeeded, the median of ${rounds} rounds (ratios ${ratios}); floor: ${total} concurrent (HTTP request + durable commit)s, alternating with them`,
});

reader.close();
await floor.stop();
await local.stop();
rmSync(dataDir, { recursive: true, force: true });
rmSync(floorDir, { recursive: true, force: true });
