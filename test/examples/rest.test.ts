import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ROUTES } from '../../functions/api/routes.ts';
import { type LocalProcess, newDataDir, REPO, startLocal } from '../e2e/harness.ts';

/**
 * The curl examples in examples/rest/, run as a user would (bash, curl from
 * PATH) against local mode started as a separate process. Each script
 * declares the route it calls (`# Route:`) and the HTTP status of each call
 * (`# Expect:`; `a|b` is either, `200+` is one or more); the scripts print
 * `HTTP <status>` after every call, which is what is compared. Output is
 * matched so that it holds with and without jq on PATH (pretty or compact JSON).
 */

const execFileAsync = promisify(execFile);
const REST = join(REPO, 'examples/rest');

interface Script {
  readonly file: string;
  readonly routes: readonly string[];
  readonly expect: readonly string[];
}

const scripts: Script[] = readdirSync(REST)
  .filter((f) => f.endsWith('.sh') && !f.startsWith('_'))
  .sort()
  .map((file) => {
    const text = readFileSync(join(REST, file), 'utf8');
    return {
      file,
      routes: [...text.matchAll(/^# Route: (.+)$/gm)].map((m) => (m[1] ?? '').trim()),
      expect: (/^# Expect: (.+)$/m.exec(text)?.[1] ?? '').trim().split(/\s+/),
    };
  });

/** Whether the statuses printed match the script's `# Expect:` line. */
function matches(expected: readonly string[], got: readonly string[]): boolean {
  let i = 0;
  for (const token of expected) {
    const repeat = token.endsWith('+');
    const allowed = token.replace(/\+$/, '').split('|');
    if (!allowed.includes(got[i] ?? '')) return false;
    i++;
    while (repeat && allowed.includes(got[i] ?? '')) i++;
  }
  return i === got.length;
}

describe('matches', () => {
  it('reads exact, alternative and repeated statuses', () => {
    expect(matches(['200'], ['200'])).toBe(true);
    expect(matches(['201|200', '201|200'], ['201', '200'])).toBe(true);
    expect(matches(['200+'], ['200', '200', '200'])).toBe(true);
    expect(matches(['200+'], [])).toBe(false);
    expect(matches(['202'], ['202', '202'])).toBe(false);
    expect(matches(['204'], ['404'])).toBe(false);
  });
});

describe('examples/rest', () => {
  it('has an example for every route of the API, and none for a route that does not exist', () => {
    const covered = scripts.flatMap((s) => s.routes).sort();

    expect(covered).toEqual(Object.keys(API_ROUTES).sort());
    for (const s of scripts) expect(s.expect.length, s.file).toBeGreaterThan(0);
  });
});

describe('examples/rest against local mode', () => {
  let local: LocalProcess;
  let work: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'rw-rest-'));
    // A copy of the example playbooks as the asset root, so uploads do not land in the repository.
    cpSync(join(REPO, 'examples/playbooks'), join(work, 'assets'), { recursive: true });
    local = await startLocal(newDataDir(), { LOCAL_STORAGE_PATH: join(work, 'assets') });
    env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: work,
      RW: local.url,
      REMOTE_WORKER_TOKEN: local.token,
      RW_FOLLOW_INTERVAL: '0.2',
      RW_FOLLOW_MAX_POLLS: '250',
    };
  }, 60_000);

  afterAll(async () => {
    await local?.stop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  /** Run one example; assert every call's status against its `# Expect:` line. */
  async function run(file: string, args: readonly string[] = [], extraEnv: Record<string, string> = {}) {
    const script = scripts.find((s) => s.file === file);
    if (script === undefined) throw new Error(`no example ${file}`);
    const { stdout } = await execFileAsync('bash', [join(REST, file), ...args], {
      cwd: work,
      env: { ...env, ...extraEnv },
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`${file} failed: ${error.message}\n${error.stdout ?? ''}\n${error.stderr ?? ''}`);
    });
    const statuses = [...stdout.matchAll(/^HTTP (\d{3})$/gm)].map((m) => m[1] ?? '');
    expect(
      matches(script.expect, statuses),
      `${file}: expected ${script.expect.join(' ')}, got ${statuses.join(' ')}\n${stdout}`,
    ).toBe(true);
    return stdout;
  }

  const idFrom = (stdout: string, what: 'run' | 'batch'): string => {
    const id = new RegExp(`^${what} id: (\\S+)$`, 'm').exec(stdout)?.[1];
    if (id === undefined) throw new Error(`no ${what} id in:\n${stdout}`);
    return id;
  };

  it('checks health and fetches the contract without a token', async () => {
    await run('healthz.sh', [], { REMOTE_WORKER_TOKEN: '' });
    const out = await run('openapi.sh', [], { REMOTE_WORKER_TOKEN: '' });

    expect(out).toContain('/runs/{id}/logs');
    expect(JSON.parse(readFileSync(join(work, 'openapi.json'), 'utf8')).openapi).toMatch(/^3\./);
  });

  it('registers, lists, reads and deletes targets, and serves the inventory', async () => {
    await run('targets-put.sh');
    const list = await run('targets-list.sh');
    await run('targets-get.sh', ['orders-db']);
    const inventory = await run('inventory.sh');
    const discovered = await run('discovery-refresh.sh');
    await run('discovery-list.sh');
    await run('targets-delete.sh', ['lab-k3s']);

    expect(list).toContain('"lab-k3s"');
    expect(inventory).toContain('localhost');
    expect(discovered).toMatch(/"vms": ?\[\]/);
    await expect(run('targets-get.sh', ['lab-k3s'])).rejects.toThrow(/expected 200, got 404/);
  });

  it('uploads and lists assets', async () => {
    await run('assets-upload.sh');
    const list = await run('assets-list.sh');

    expect(list).toContain('uploads/site.yml');
  });

  it('submits a run, follows its logs to the end, reads and lists it', async () => {
    const submitted = await run('runs-submit.sh', [], { RW_ASSET: 'uploads/site.yml' });
    const id = idFrom(submitted, 'run');

    const logs = await run('runs-follow-logs.sh', [id]);
    const read = await run('runs-get.sh', [id]);
    const listed = await run('runs-list.sh', ['succeeded']);

    expect(logs).toContain('hello from examples/rest from localhost');
    expect(logs).toContain('remote-worker: ansible-playbook exited with code 0');
    expect(read).toMatch(/"state": ?"succeeded"/);
    expect(listed).toContain(id);
  }, 60_000);

  it('cancels a running run', async () => {
    const submitted = await run('runs-submit.sh', [], {
      RW_ASSET: 'hello/slow.yml',
      RW_EXTRA_VARS: '{"seconds":60}',
    });
    const id = idFrom(submitted, 'run');

    const cancelled = await run('runs-cancel.sh', [id]);
    await run('runs-follow-logs.sh', [id]);
    const read = await run('runs-get.sh', [id]);

    expect(cancelled).toMatch(/"cancelRequested": ?true/);
    expect(read).toMatch(/"state": ?"cancelled"/);
  }, 60_000);

  it('submits a batch, waits for its rollup and retries its failed targets', async () => {
    const submitted = await run('batches-submit.sh', ['localhost'], { RW_ASSET: 'hello/fail.yml' });
    const batch = idFrom(submitted, 'batch');

    const rollup = await run('batches-get.sh', [batch, '--wait']);
    const retried = await run('batches-retry.sh', [batch]);
    const retry = idFrom(retried, 'batch');
    await run('batches-get.sh', [retry, '--wait']);

    expect(rollup).toMatch(/"complete": ?true/);
    expect(retry).not.toBe(batch);
  }, 60_000);
});
