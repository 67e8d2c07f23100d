import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCALHOST_TARGET, type LocalProcess, newDataDir, REPO, startLocal } from './harness.ts';

interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run the installed bin (bin/remote-worker.mjs) as a user would, against `url`. */
function cli(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO, 'bin/remote-worker.mjs'), ...args], {
      cwd: tmpdir(),
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        REMOTE_WORKER_POLL_MS: '200',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the remote-worker CLI against local mode', () => {
  let local: LocalProcess;
  let work: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'rw-cli-'));
    // A copy of the example playbooks, so uploads do not land in the repository.
    cpSync(join(REPO, 'examples/playbooks'), join(work, 'assets'), { recursive: true });
    local = await startLocal(newDataDir(), { LOCAL_STORAGE_PATH: join(work, 'assets') });
    env = { REMOTE_WORKER_URL: local.url, REMOTE_WORKER_TOKEN: local.token };
    writeFileSync(join(work, 'localhost.json'), JSON.stringify(LOCALHOST_TARGET));
    const put = await cli(['targets', 'put', 'localhost', '--file', join(work, 'localhost.json')], env);
    expect(put, put.stderr).toMatchObject({ code: 0, stdout: 'target localhost created\n' });
  }, 60_000);
  afterAll(async () => {
    await local?.stop();
  });

  it('streams the play with --follow and exits with the run result: 0 succeeded, 1 failed (--json: the final run on stdout)', async () => {
    const [ok, failed] = await Promise.all([
      cli(
        [
          'runs',
          'submit',
          '--kind',
          'vm',
          '--target',
          'localhost',
          '--asset',
          'hello/site.yml',
          '--extra-vars',
          '{"greeting":"hi from the cli"}',
          '--follow',
        ],
        env,
      ),
      cli(
        [
          'runs',
          'submit',
          '--kind',
          'vm',
          '--target',
          'localhost',
          '--asset',
          'hello/fail.yml',
          '--extra-vars',
          '{"reason":"broken on purpose"}',
          '--follow',
          '--json',
        ],
        env,
      ),
    ]);

    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('PLAY [Say hello]');
    expect(ok.stdout).toContain('hi from the cli from localhost');
    expect(ok.stderr).toMatch(/run \S+ succeeded/);

    expect(failed.code, failed.stderr).toBe(1);
    const run = JSON.parse(failed.stdout);
    expect(run).toMatchObject({ state: 'failed', exitCode: 2, timings: { runTimeMs: expect.any(Number) } });
    expect(failed.stderr).toContain('broken on purpose');

    const got = await cli(['runs', 'get', run.id, '--json'], env);
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ id: run.id, state: 'failed' });
  }, 90_000);

  it('submits a batch and shows its progress as plain lines when stdout is not a terminal', async () => {
    const res = await cli(
      [
        'batches',
        'submit',
        '--targets',
        'localhost',
        '--kind',
        'vm',
        '--asset',
        'hello/site.yml',
        '--follow',
      ],
      env,
    );

    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toMatch(/batch \S+: 1 queued, 0 refused/);
    expect(res.stdout.trimEnd().split('\n').at(-1)).toMatch(/^batch \S+: 1 succeeded \(1 total\)$/);
    expect(res.stdout).not.toContain('\r');
  }, 90_000);

  it('uploads an asset, lists it, and refuses to overwrite it', async () => {
    const file = join(work, 'play.yml');
    const content = '- hosts: all\n  gather_facts: false\n  tasks: []\n';
    writeFileSync(file, content);
    const size = Buffer.byteLength(content);

    const up = await cli(['assets', 'upload', file, '--path', 'cli/play.yml'], env);
    const again = await cli(['assets', 'upload', file, '--path', 'cli/play.yml'], env);
    const list = await cli(['assets', 'list', '--json'], env);

    expect(up, up.stderr).toMatchObject({
      code: 0,
      stdout: `uploaded cli/play.yml (playbook, ${size} bytes)\n`,
    });
    expect(again.code).toBe(65);
    expect(again.stderr).toContain('already exists');
    expect(JSON.parse(list.stdout).assets).toContainEqual({ path: 'cli/play.yml', size, type: 'playbook' });
  }, 60_000);

  it('prints the problem and exits 65 for a refused batch, 77 for a wrong token, 64 for a usage error', async () => {
    const [refused, unauthorized, usage] = await Promise.all([
      cli(
        ['batches', 'submit', '--targets', 'localhost,ghost', '--kind', 'vm', '--asset', 'hello/site.yml'],
        env,
      ),
      cli(['runs', 'list'], { ...env, REMOTE_WORKER_TOKEN: 'wrong' }),
      cli(['runs', 'submit', '--target', 'localhost'], env),
    ]);

    expect(refused.code).toBe(65);
    expect(refused.stderr).toContain('error: The target selection is refused (HTTP 422)');
    expect(refused.stderr).toContain('- ghost: No target with id ghost is registered');
    expect(unauthorized.code).toBe(77);
    expect(usage.code).toBe(64);
    expect(usage.stderr).toContain('--kind is required');
  }, 60_000);
});
