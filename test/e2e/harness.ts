import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const REPO = resolve(import.meta.dirname, '../..');

export interface LocalProcess {
  readonly url: string;
  readonly token: string;
  readonly proc: ChildProcess;
  readonly output: () => string;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
  /** SIGKILL: no drain, no cleanup. */
  kill9(): Promise<void>;
}

export const newDataDir = () => mkdtempSync(join(tmpdir(), 'rw-e2e-'));

/**
 * Start `npm start`'s entry point as a separate process, as an operator would
 * (or another local-mode entry under REPO, such as the load bench's server).
 */
export async function startLocal(
  dataDir: string,
  env: Record<string, string> = {},
  entry = 'bin/local.ts',
): Promise<LocalProcess> {
  const token = 'rw_test_token_0123456789';
  const proc = spawn(process.execPath, ['--import', 'tsx', join(REPO, entry)], {
    cwd: REPO,
    env: {
      ...process.env,
      PORT: '0',
      REMOTE_WORKER_DATA_DIR: dataDir,
      REMOTE_WORKER_TOKEN: token,
      LOCAL_EXECUTOR: 'process',
      LOG_LEVEL: 'WARN',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`local mode did not start within 60 s:\n${out}`)), 60_000);
    const check = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        ok(m[1]);
      }
    };
    proc.stderr?.on('data', check);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`local mode exited with ${code}:\n${out}`));
    });
  });
  const exited = new Promise<void>((ok) => proc.once('exit', () => ok()));
  return {
    url,
    token,
    proc,
    output: () => out,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
    async kill9() {
      proc.kill('SIGKILL');
      await exited;
    },
  };
}

export interface ApiResponse<T = any> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
}

export function client(url: string, token: string) {
  return async function api<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const res = await fetch(url + path, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
  };
}

export type Api = ReturnType<typeof client>;

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'refused']);

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Until the run is in one of `states` (or any terminal state); a time-out says the state it was last seen in. */
export async function waitForState(
  api: Api,
  id: string,
  states: readonly string[] | 'terminal',
  timeoutMs = 30_000,
) {
  let last = 'no answer yet';
  try {
    return await waitFor(
      `run ${id} to reach ${states}`,
      async () => {
        const { body } = await api('GET', `/runs/${id}`);
        last = `${body.state}${body.reason === undefined ? '' : ` (${body.reason})`}`;
        return (states === 'terminal' ? TERMINAL.has(body.state) : states.includes(body.state))
          ? body
          : undefined;
      },
      timeoutMs,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; last seen ${last}`);
  }
}

export async function allLogs(api: Api, id: string): Promise<string> {
  let cursor: string | undefined;
  let text = '';
  for (;;) {
    const { body } = await api(
      'GET',
      `/runs/${id}/logs${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    for (const line of body.lines) text += `${line.text}\n`;
    if (body.lines.length === 0 || body.nextCursor === cursor) return text;
    cursor = body.nextCursor;
  }
}

/** Pids in a process group, read from /proc. */
export function pidsInGroup(pgid: number): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') pids.push(Number(name));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

/** This machine's registry row; the benches use it too. */
export { LOCALHOST_TARGET } from '../../bench/support/localhost-target.ts';

/** Every file under `dir` except secrets.json, as one string. */
export function everythingStoredIn(dir: string): string {
  let text = '';
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) text += everythingStoredIn(path);
    else if (name !== 'secrets.json') text += readFileSync(path).toString('latin1');
  }
  return text;
}
