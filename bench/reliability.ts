/**
 * The reliability suites at their large sizes (issue 14 item 10); the CI
 * sizes run in test/reliability/. Prints figures, and the correctness counts
 * that must be zero (exit code 1 when one is not); never asserts a timing.
 *
 *   npm run bench:reliability -- soak    # 2,000 runs through kill -9 (BENCH_SOAK_RUNS)
 *   npm run bench:reliability -- fuzz    # 20,000 requests (BENCH_FUZZ_REQUESTS)
 *   npm run bench:reliability -- aws     # 1,000 runs on moto (BENCH_AWS_RUNS)
 *   npm run bench:reliability -- load    # 200 clients for 60 s (BENCH_LOAD_CLIENTS, BENCH_LOAD_SECONDS)
 *
 * Timings are given as ratios to a floor measured in the same run (an idle
 * round trip to GET /healthz), so figures from a loaded machine still compare.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startLocal } from '../test/e2e/harness.ts';
import { apiFuzz } from '../test/reliability/api-fuzz.ts';
import { awsRedelivery, CRASH_STEPS, taskOf } from '../test/reliability/aws-redelivery.ts';
import { crashSoak, soakVerdict } from '../test/reliability/crash-soak.ts';
import { startMoto } from '../test/support/moto.ts';
import { LOCALHOST_TARGET } from './support/localhost-target.ts';
import { quantile } from './support/stats.ts';

const size = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const seed = size('BENCH_SEED', Date.now() % 1_000_000);
const ms = (x: number) => `${x.toFixed(1)} ms`;
let failed = false;
const verdict = (counts: Record<string, number>) => {
  const bad = Object.entries(counts).filter(([, n]) => n !== 0);
  console.log(
    `  must be 0: ${Object.entries(counts)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
  if (bad.length > 0) failed = true;
};
const log = (line: string) => process.stderr.write(`  … ${line}\n`);

async function soak() {
  const runs = size('BENCH_SOAK_RUNS', 2000);
  const r = await crashSoak({
    runs,
    killEveryMs: [3000, 6000],
    maxKills: Number.POSITIVE_INFINITY,
    playSeconds: 1,
    clients: 8,
    relayConcurrency: 6,
    seed,
    settleTimeoutMs: 300_000,
    progress: log,
  });
  console.log(`crash soak: ${runs} runs, seed ${seed}`);
  console.log(
    `  ${r.kills} kill -9s in ${(r.durationMs / 1000).toFixed(0)} s; restart median ${ms(quantile(r.restartMs, 0.5))}, max ${ms(Math.max(...r.restartMs))}; ${r.resubmits} resubmits after dropped connections`,
  );
  console.log(`  ${((runs / r.durationMs) * 1000).toFixed(2)} runs/s end to end through the crashes`);
  verdict(soakVerdict(r));
}

async function fuzz() {
  const requests = size('BENCH_FUZZ_REQUESTS', 20_000);
  const r = await apiFuzz({ requests, seed, progress: log });
  console.log(`API fuzz: ${r.requests} requests, seed ${seed}, ${(r.durationMs / 1000).toFixed(1)} s`);
  console.log(
    `  answers: ${[...r.byStatus]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}×${n}`)
      .join(' ')}; ${r.byOperation.size} operations (wrong methods included)`,
  );
  for (const f of r.findings.slice(0, 10)) console.log(`  finding: ${f.status} ${f.problem}: ${f.request}`);
  verdict({ findings: r.findings.length, unsettled: r.unsettled });
}

async function aws() {
  const runs = size('BENCH_AWS_RUNS', 1000);
  const moto = await startMoto();
  try {
    const r = await awsRedelivery(moto, { runs, seed, containers: 4, progress: log });
    console.log(`AWS dispatch on moto: ${runs} runs, seed ${seed}, ${(r.durationMs / 1000).toFixed(1)} s`);
    console.log(
      `  ${r.deliveries} deliveries in ${r.invocations} batches, ${r.coldStarts} cold starts; crashes: ${CRASH_STEPS.map((s) => `${s} ${r.crashes[s].throw}+${r.crashes[s].exit} exit`).join(', ')}`,
    );
    const duplicates = [...r.tasksByStartedBy.values()].filter((arns) => arns.length > 1).length;
    const missing = [...r.tasksByStartedBy.values()].filter((arns) => arns.length === 0).length;
    verdict({
      duplicateTasks: duplicates,
      runsWithoutTask: missing,
      tasksBeyondRuns: r.totalTasks - runs,
      notLaunchedOnce: r.finalRuns.filter(
        (run) =>
          run.state !== 'launched' ||
          run.attempt !== 1 ||
          taskOf(run) !== r.tasksByStartedBy.get(`rw/${run.id}/1`)?.[0],
      ).length,
      leftOnQueue: r.leftOnQueue,
    });
  } finally {
    await moto.stop();
  }
}

/** RSS of a process in MiB, from /proc. */
const rssMiB = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? Number.NaN) / 1024;
};

async function load() {
  const clients = size('BENCH_LOAD_CLIENTS', 200);
  const seconds = size('BENCH_LOAD_SECONDS', 60);
  const dataDir = mkdtempSync(join(tmpdir(), 'rw-load-'));
  // The harness sets LOCAL_EXECUTOR=process; the load server passes its no-op executor, which wins.
  const server = await startLocal(
    dataDir,
    { LOG_LEVEL: 'ERROR', RELAY_CONCURRENCY: '8' },
    'bench/load-server.ts',
  );
  try {
    const { url, token } = server;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(url + path, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, json: text === '' ? undefined : JSON.parse(text) };
    };
    await call('PUT', '/targets/localhost', LOCALHOST_TARGET);
    const runIds: string[] = [
      (await call('POST', '/runs', { kind: 'vm', targetId: 'localhost', asset: 'hello/site.yml' })).json.id,
    ];

    // The floor: one client, idle server, sequential round trips.
    const floor: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      await call('GET', '/healthz');
      floor.push(performance.now() - t0);
    }

    type Route = 'POST /runs' | 'GET /runs/{id}' | 'GET /runs' | 'GET /targets';
    const mix: readonly [Route, number][] = [
      ['POST /runs', 0.25],
      ['GET /runs/{id}', 0.4],
      ['GET /runs', 0.2],
      ['GET /targets', 0.15],
    ];
    const latencies = new Map<Route, number[]>(mix.map(([r]) => [r, []]));
    const errors = new Map<string, number>();
    const rss: { at: number; mib: number }[] = [];
    const pid = server.proc.pid as number;
    const until = performance.now() + seconds * 1000;
    const sampler = (async () => {
      while (performance.now() < until) {
        rss.push({ at: performance.now(), mib: rssMiB(pid) });
        await sleep(1000);
      }
    })();
    let pick = 0;
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        let n = c;
        while (performance.now() < until) {
          // A low-discrepancy sequence, so every client runs the same mix without a shared PRNG.
          let x = (n++ * 0.6180339887) % 1;
          let route: Route = 'GET /targets';
          for (const [r, weight] of mix) {
            if (x < weight) {
              route = r;
              break;
            }
            x -= weight;
          }
          const t0 = performance.now();
          try {
            const res =
              route === 'POST /runs'
                ? await call('POST', '/runs', { kind: 'vm', targetId: 'localhost', asset: 'hello/site.yml' })
                : route === 'GET /runs/{id}'
                  ? await call('GET', `/runs/${runIds[pick++ % runIds.length]}`)
                  : route === 'GET /runs'
                    ? await call('GET', '/runs?limit=25')
                    : await call('GET', '/targets');
            latencies.get(route)?.push(performance.now() - t0);
            if (res.status >= 300)
              errors.set(`${route} ${res.status}`, (errors.get(`${route} ${res.status}`) ?? 0) + 1);
            else if (route === 'POST /runs') runIds.push(res.json.id);
          } catch (error) {
            const key = `${route} ${(error as Error).message}`;
            errors.set(key, (errors.get(key) ?? 0) + 1);
          }
        }
      }),
    );
    await sampler;

    const f50 = quantile(floor, 0.5);
    console.log(`load: ${clients} loopback clients for ${seconds} s, no-op executor, ${process.version}`);
    console.log(`  floor (idle GET /healthz, one client): p50 ${ms(f50)}, p99 ${ms(quantile(floor, 0.99))}`);
    let total = 0;
    for (const [route, xs] of latencies) {
      total += xs.length;
      const p50 = quantile(xs, 0.5);
      const p99 = quantile(xs, 0.99);
      console.log(
        `  ${route.padEnd(15)} n=${String(xs.length).padStart(6)}  p50 ${ms(p50)} (${(p50 / f50).toFixed(1)}× floor)  p99 ${ms(p99)}  p99/p50 ${(p99 / p50).toFixed(2)}`,
      );
    }
    console.log(`  ${(total / seconds).toFixed(0)} requests/s; ${runIds.length} runs submitted`);
    // Memory: the first 10 s warm up (JIT, SQLite cache); after that RSS should stay flat.
    const warm = rss.filter((s) => s.at - (rss[0]?.at ?? 0) >= 10_000);
    const third = Math.max(1, Math.floor(warm.length / 3));
    const mean = (xs: readonly { mib: number }[]) =>
      xs.reduce((a, s) => a + s.mib, 0) / Math.max(1, xs.length);
    console.log(
      `  server RSS: start ${rss[0]?.mib.toFixed(0)} MiB; after warm-up first third ${mean(warm.slice(0, third)).toFixed(0)} MiB, last third ${mean(warm.slice(-third)).toFixed(0)} MiB, max ${Math.max(...rss.map((s) => s.mib)).toFixed(0)} MiB`,
    );
    for (const [key, n] of errors) console.log(`  error: ${key} ×${n}`);
    verdict({ errors: [...errors.values()].reduce((a, n) => a + n, 0) });
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const suites = { soak, fuzz, aws, load } as const;
const chosen = process.argv[2] ?? 'all';
for (const [name, run] of Object.entries(suites)) {
  if (chosen === 'all' || chosen === name) await run();
}
if (!(chosen === 'all' || chosen in suites)) {
  console.error(`usage: bench/reliability.ts [${Object.keys(suites).join('|')}|all]`);
  process.exit(2);
}
process.exit(failed ? 1 : 0);
