import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '../..');
const NODE = join(REPO, 'node_modules/.bin/node');
const ENTRY = join(REPO, 'dist/local/local.mjs');
const build = (...args: string[]) =>
  execFileSync(NODE, [join(REPO, 'bin/local-mode/build.mjs'), ...args], { cwd: REPO, encoding: 'utf8' });

/** `npm start` runs local mode from the bundle prestart builds (bin/local-mode/build.mjs), not through tsx. */
describe('the local-mode bundle', () => {
  let proc: ChildProcess | undefined;
  let out = '';
  let dataDir: string;

  beforeAll(() => {
    build('--force');
    dataDir = mkdtempSync(join(tmpdir(), 'rw-bundle-'));
  });
  afterAll(async () => {
    if (proc !== undefined && proc.exitCode === null) {
      const exited = new Promise((ok) => proc?.once('exit', ok));
      proc.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('is rebuilt only when a source it was built from changed', () => {
    const builtAt = statSync(ENTRY).mtimeMs;

    const again = build();

    expect(again).toBe(''); // says "built …" only when it builds
    expect(statSync(ENTRY).mtimeMs).toBe(builtAt);
  });

  it('starts, listens, and finds the files beside its sources (example playbooks)', async () => {
    proc = spawn(NODE, [ENTRY], {
      cwd: REPO,
      env: {
        ...process.env,
        PORT: '0',
        REMOTE_WORKER_DATA_DIR: dataDir,
        REMOTE_WORKER_TOKEN: 'bundle',
        LOCAL_EXECUTOR: 'process',
        LOG_LEVEL: 'WARN',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stderr?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const url = await new Promise<string>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`no "listening on" within 60 s:\n${out}`)), 60_000);
      proc?.stderr?.on('data', () => {
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m?.[1] !== undefined) {
          clearTimeout(timer);
          ok(m[1]);
        }
      });
      proc?.once('exit', (code) => fail(new Error(`exited with ${code}:\n${out}`)));
    });
    const headers = { authorization: 'Bearer bundle', 'content-type': 'application/json' };

    const health = await fetch(`${url}/healthz`);
    const put = await fetch(`${url}/targets/localhost`, {
      method: 'PUT',
      headers,
      body: JSON.stringify({
        kind: 'vm',
        cloud: 'local',
        name: 'localhost',
        address: '127.0.0.1',
        connection: 'local',
      }),
    });
    // The asset is looked up at submit: a wrong example-playbook path would answer 400 here.
    const run = await fetch(`${url}/runs`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ kind: 'vm', targetId: 'localhost', asset: 'hello/site.yml' }),
    });

    expect(out).toContain('executor: process');
    expect(health.status).toBe(200);
    expect(put.status).toBe(201);
    expect(run.status).toBe(202);
  });

  it('loads no cloud SDK and no kubeconfig token code at start: those are dynamic imports', () => {
    // The modules `node dist/local/local.mjs` loads before any dynamic import(), from esbuild's metafile.
    type Output = {
      imports: { path: string; kind: string; external?: boolean }[];
      inputs: Record<string, unknown>;
    };
    const meta = JSON.parse(readFileSync(join(REPO, 'dist/local/meta.json'), 'utf8')) as {
      outputs: Record<string, Output>;
    };
    const reached = new Set<string>();
    const visit = (path: string) => {
      if (reached.has(path)) return;
      reached.add(path);
      for (const i of meta.outputs[path]?.imports ?? []) if (i.kind === 'import-statement') visit(i.path);
    };
    visit('dist/local/local.mjs');
    const sources = [...reached].flatMap((path) => Object.keys(meta.outputs[path]?.inputs ?? {}));

    expect(reached.size).toBeGreaterThan(1);
    expect(sources).toContain('bin/local-mode/local-mode.ts');
    expect(sources.filter((s) => s.includes('/cluster-auth/'))).toEqual([]);
    expect([...reached].filter((p) => /^@(aws-sdk|smithy|azure|google-cloud|kubernetes)\//.test(p))).toEqual(
      [],
    );
  });
});
