/**
 * Local mode's footprint, each figure beside a floor measured in the same run:
 * - idle RSS of `npm start`'s process (the prebuilt bundle, default settings: no cloud runner) against a
 *   process holding only an HTTP server and a better-sqlite3 database (bench/support/floor-server.mjs);
 * - start → healthy after `kill -9`: local mode is killed with runs in flight, then started again on the
 *   same data directory, timed from the spawn to the first 200 from /healthz; the floor process is timed
 *   the same way. Goal ≤ 1 s.
 * Prints figures; asserts nothing.
 *
 *   npm run bench:local-footprint            # 3 restarts
 *   BENCH_RESTARTS=5 npm run bench:local-footprint
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reportFigure } from './support/figures.ts';
import {
  type ListeningProcess,
  NODE,
  REPO,
  startFloor,
  startListening,
} from './support/listening-process.ts';
import { LOCALHOST_TARGET } from './support/localhost-target.ts';
import { quantile } from './support/stats.ts';

const IDLE_MS = 3000;
const restarts = Number(process.env.BENCH_RESTARTS ?? 3);

// prestart's build: a no-op when the bundle is up to date.
execFileSync(NODE, [join(REPO, 'bin/local-mode/build.mjs')], { cwd: REPO, stdio: 'inherit' });
const ENTRY = join(REPO, 'dist/local/local.mjs');
const TOKEN = 'footprint';
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

const startLocal = (dataDir: string) =>
  startListening([ENTRY], {
    PORT: '0',
    REMOTE_WORKER_DATA_DIR: dataDir,
    REMOTE_WORKER_TOKEN: TOKEN,
    LOCAL_EXECUTOR: 'process',
    LOG_LEVEL: 'ERROR',
  });

const idleRss = async (p: ListeningProcess): Promise<number> => {
  await new Promise((r) => setTimeout(r, IDLE_MS));
  return p.rssMiB();
};

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'rw-footprint-'));
  dirs.push(dir);
  return dir;
};

const localRss: number[] = [];
const floorRss: number[] = [];
const localRestart: number[] = [];
const floorRestart: number[] = [];
try {
  const dataDir = tempDir();
  const floorDir = tempDir();
  let local = await startLocal(dataDir);
  await fetch(`${local.url}/targets/localhost`, {
    method: 'PUT',
    headers,
    body: JSON.stringify(LOCALHOST_TARGET),
  });
  localRss.push(await idleRss(local));
  let floor = await startFloor(floorDir);
  floorRss.push(await idleRss(floor));

  for (let i = 0; i < restarts; i++) {
    // Runs accepted and in flight when the process dies: the restart picks them up.
    await Promise.all(
      Array.from({ length: 5 }, () =>
        fetch(`${local.url}/runs`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ kind: 'vm', targetId: 'localhost', asset: 'hello/site.yml' }),
        }).then((r) => r.arrayBuffer()),
      ),
    );
    await local.stop('SIGKILL');
    local = await startLocal(dataDir);
    localRestart.push(local.healthyMs);

    await fetch(`${floor.url}/`, { method: 'POST', body: '{}' }).then((r) => r.arrayBuffer());
    await floor.stop('SIGKILL');
    floor = await startFloor(floorDir);
    floorRestart.push(floor.healthyMs);
  }
  localRss.push(await idleRss(local));
  floorRss.push(await idleRss(floor));
  await local.stop('SIGKILL');
  await floor.stop('SIGKILL');
} finally {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}

const median = (xs: readonly number[]) => quantile(xs, 0.5);
reportFigure({
  figure: 'local mode idle RSS',
  now: median(localRss),
  floor: median(floorRss),
  unit: 'MiB',
  goal: '≤ 1.5×',
  note: `npm start's bundle, default settings, ${IDLE_MS / 1000} s idle, at start and after ${restarts} restarts (median of ${localRss.length}); floor: HTTP server + better-sqlite3 process`,
});
reportFigure({
  figure: 'local mode start → healthy (after kill -9)',
  now: median(localRestart) / 1000,
  floor: median(floorRestart) / 1000,
  unit: 's',
  goal: '≤ 1 s',
  note: `spawn → first 200 from /healthz, killed with 5 runs in flight, median of ${restarts}; floor: the same for the floor process (without prestart's prerequisites check)`,
});
