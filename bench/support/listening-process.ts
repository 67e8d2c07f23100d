import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export const REPO = resolve(import.meta.dirname, '../..');
/** The Node.js 22 npm scripts run on (node_modules/.bin first on PATH). */
export const NODE = resolve(REPO, 'node_modules/.bin/node');

export interface ListeningProcess {
  readonly proc: ChildProcess;
  readonly url: string;
  /** Spawn → first 200 from GET /healthz, in ms. */
  readonly healthyMs: number;
  /** The process's resident set now (VmRSS), in MiB. */
  rssMiB(): number;
  /** SIGTERM (or `signal`) to the process group, and wait for the exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Start `node <args>` in its own process group, wait for its "listening on <url>" line, then poll
 * GET /healthz until it answers 200. The clock runs from just before the spawn.
 */
export async function startListening(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
): Promise<ListeningProcess> {
  const t0 = performance.now();
  const proc = spawn(NODE, args, {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let out = '';
  const exited = new Promise<void>((ok) => proc.once('exit', () => ok()));
  const url = await new Promise<string>((ok, fail) => {
    proc.stderr?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1] !== undefined) ok(m[1]);
    });
    proc.once('exit', (code) => fail(new Error(`${args.join(' ')} exited with ${code}:\n${out}`)));
  });
  for (;;) {
    const res = await fetch(`${url}/healthz`).catch(() => undefined);
    await res?.arrayBuffer();
    if (res?.status === 200) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const healthyMs = performance.now() - t0;
  return {
    proc,
    url,
    healthyMs,
    rssMiB() {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'));
      return Number(m?.[1] ?? Number.NaN) / 1024;
    },
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.pid !== undefined) {
        try {
          process.kill(-proc.pid, signal);
        } catch {
          // already gone
        }
      }
      await exited;
    },
  };
}

/** The floor process: an HTTP server and a better-sqlite3 WAL database, nothing else (floor-server.mjs). */
export const startFloor = (dataDir: string): Promise<ListeningProcess> =>
  startListening([resolve(REPO, 'bench/support/floor-server.mjs')], { FLOOR_DATA_DIR: dataDir });
