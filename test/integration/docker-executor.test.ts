import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerExecutor } from '../../shared/adapters/relay/docker-executor.ts';
import { LauncherUnavailableError, LaunchRejectedError } from '../../shared/domain/errors.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import type { ExecutionRequest } from '../../shared/ports/executor.ts';
import type { LogLineInput } from '../../shared/ports/log-store.ts';
import { containersLabelled, ensureAnsibleImage, inspectContainer } from '../support/ansible-image.ts';
import { fakeCli as fakeCliIn } from '../support/fake-cli.ts';

/**
 * The docker executor on a real engine: podman as the docker CLI, plays from
 * test/fixtures/playbooks in an image with ansible-playbook and no shim.
 * Only the CLI failures an engine cannot be made to produce on demand (a
 * daemon that is down, a CLI that hangs) use a stand-in script.
 */
const BASE_IMAGE = 'localhost/debian:bookworm';
const PLAYBOOKS = join(import.meta.dirname, '../fixtures/playbooks');
let image: string;
let scratch: string;
beforeAll(() => {
  image = ensureAnsibleImage();
  scratch = mkdtempSync(join(tmpdir(), 'rw-docker-test-'));
}, 600_000);
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function collector() {
  const lines: LogLineInput[] = [];
  return {
    lines,
    sink: (batch: readonly LogLineInput[]) => void lines.push(...batch),
    text: () => lines.map((l) => l.text).join('\n'),
  };
}

function request(asset: string, overrides: Partial<TaskSpec> = {}, image_?: string): ExecutionRequest {
  const runId = `T${randomUUID().slice(0, 8).toUpperCase()}`;
  const workDir = join(scratch, `work-${runId}`);
  mkdirSync(workDir, { mode: 0o700 });
  return {
    runId,
    image: image_ ?? image,
    spec: {
      runId,
      kind: 'vm',
      asset: { kind: 'file', path: join(PLAYBOOKS, asset) },
      assetType: 'playbook',
      inventory: { all: { hosts: { localhost: { ansible_connection: 'local' } } } },
      extraVars: {},
      secretVars: [],
      timeoutSeconds: 120,
      ...overrides,
    },
    secretEnv: {},
    workDir,
  };
}

const executor = (executorId = 'it-docker') =>
  new DockerExecutor({ bin: 'podman', assetRoot: PLAYBOOKS, executorId, pollMs: 50, reapGraceMs: 2000 });

/** Live processes whose environment marks them as a task of this run (the shim and the docker CLI it started). */
function markedWith(runId: string): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
        return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`RW_RUN_ID=${runId}`);
      } catch {
        return false;
      }
    })
    .map(Number);
}

const nameOf = (runId: string) => `rw-${runId.toLowerCase()}`;
const containersOf = (runId: string) => containersLabelled(`remote-worker.run-id=${runId}`);

async function until(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('DockerExecutor on podman', () => {
  it('runs the tool in a labelled, read-only-mounted container that logs nothing to the engine', async () => {
    const req = request('pause.yml', { extraVars: { pause_seconds: 3, marker: 'm-1' } });
    const out = collector();

    const exec = await executor().start(req, out.sink);
    await until('the container', () => containersOf(req.runId).length === 1);
    const [inspected] = JSON.parse(inspectContainer(nameOf(req.runId))) as [
      {
        Config: { Labels: Record<string, string>; Env: string[] };
        HostConfig: { LogConfig: { Type: string } };
        Mounts: { Source: string; Destination: string; RW: boolean }[];
        Args: string[];
      },
    ];
    const result = await exec.done;

    expect(exec.handle).toMatch(new RegExp(`^docker:${nameOf(req.runId)}/process:\\d+:\\d+$`));
    expect(inspected.Config.Labels).toMatchObject({
      'remote-worker.run-id': req.runId,
      'remote-worker.managed': 'true',
      'remote-worker.executor': 'it-docker',
    });
    expect(inspected.HostConfig.LogConfig.Type).toBe('none');
    const mounts = Object.fromEntries(inspected.Mounts.map((m) => [m.Destination, m]));
    expect(mounts['/ansible']?.RW).toBe(false);
    expect(mounts['/ansible']?.Source).toMatch(new RegExp(`^${req.workDir}/rw-task-`));
    expect(mounts['/ansible/assets']).toMatchObject({ Source: PLAYBOOKS, RW: false });
    // The prologue, then the tool: the image's own entrypoint is not used.
    expect(inspected.Args.slice(-6)).toEqual([
      'ansible-playbook',
      '-i',
      '/ansible/inventory.json',
      '-e',
      '@/ansible/extra-vars.json',
      '/ansible/assets/pause.yml',
    ]);
    expect(result).toEqual({ exitCode: 0 });
    expect(out.text()).toContain('"msg": "started, marker m-1"');
    expect(out.lines.find((l) => l.text.startsWith('remote-worker: running'))?.stream).toBe('system');
    expect(out.lines.find((l) => l.text.includes('started, marker'))?.stream).toBe('stdout');
    expect(containersOf(req.runId)).toEqual([]);
  }, 60_000);

  it('hands secrets to the container only as files: none in its config, its env or a command line', async () => {
    const secret = 'it-secret-3e9a71';
    const req = {
      ...request('secret-slow.yml', {
        extraVars: {
          expected_sha1: execFileSync('sha1sum', { input: secret, encoding: 'utf8' }).split(' ')[0],
          pause_seconds: 2,
        },
        secretVars: [{ var: 'db_password', env: 'RW_SECRET_0' }],
        secretEnvNames: ['PORTAINER_API_TOKEN'],
      }),
      secretEnv: { RW_SECRET_0: secret, PORTAINER_API_TOKEN: `tok-${secret}` },
    };
    const out = collector();

    const exec = await executor().start(req, out.sink);
    await until('the play to use the secret', () => out.text().includes('the password is'));
    const inspected = inspectContainer(nameOf(req.runId));
    const [privateDir] = readdirSync(req.workDir).filter((n) => n.startsWith('rw-task-'));
    const secretFiles = ['extra-vars.json', 'env/PORTAINER_API_TOKEN'].map((f) =>
      (statSync(join(req.workDir, privateDir ?? '', f)).mode & 0o777).toString(8),
    );
    const commandLines = readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .map((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'latin1');
        } catch {
          return '';
        }
      })
      .join('\n');
    const result = await exec.done;

    expect(result).toEqual({ exitCode: 0 }); // the play's assert saw the value intact
    expect(inspected).toContain('/bin/sh'); // the prologue that exports the secret env file
    expect(secretFiles).toEqual(['600', '600']);
    expect(inspected).not.toContain(secret);
    expect(commandLines).toContain('ansible-playbook');
    expect(commandLines).not.toContain(secret);
    expect(out.text()).toContain('the password is ********');
    expect(out.text()).toContain('env token is ********'); // exported from its 0600 file inside the container
    // The private dir with the secret files is gone with the run.
    expect(readdirSync(req.workDir).filter((n) => n.startsWith('rw-task-'))).toEqual([]);
    expect(out.text()).not.toContain(secret);
  }, 60_000);

  it('passes the tool exit code through, and 127 when the image has no ansible-playbook', async () => {
    const failing = await executor().start(request('fail.yml'), () => {});
    const missing = collector();
    const noTool = await executor().start(request('echo-var.yml', {}, BASE_IMAGE), missing.sink);

    expect(await failing.done).toEqual({ exitCode: 2 });
    expect(await noTool.done).toEqual({ exitCode: 127 });
    expect(missing.text()).toContain('remote-worker: ansible-playbook is not on the PATH of the image');
  }, 60_000);

  it("stops the container at the spec's timeout and leaves none behind", async () => {
    const req = request('pause.yml', { timeoutSeconds: 2 });
    const out = collector();
    const started = Date.now();

    const exec = await executor().start(req, out.sink);
    const result = await exec.done;

    // exit.json carries the tool's code (the CLI's 143 after docker stop); the shim's own exit is 124.
    expect(result).toEqual({ exitCode: 143 });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(out.text()).toContain('timed out after 2s');
    expect(out.text()).not.toContain('finished');
    expect(containersOf(req.runId)).toEqual([]);
  }, 60_000);

  it('kill stops the container within the grace and removes it', async () => {
    const req = request('pause.yml');
    const out = collector();
    const exec = await executor().start(req, out.sink);
    await until('the play', () => out.text().includes('started, marker'));

    const started = Date.now();
    await exec.kill(3000);

    expect(Date.now() - started).toBeLessThan(15_000);
    expect((await exec.done).exitCode).not.toBe(0);
    expect(out.text()).not.toContain('finished');
    expect(containersOf(req.runId)).toEqual([]);
  }, 60_000);

  it('a second start for the same run adopts the first container instead of running the play again', async () => {
    const req = request('pause.yml', { extraVars: { pause_seconds: 3 } });
    const firstOut = collector();
    const first = await executor().start(req, firstOut.sink);
    await until('the container', () => containersOf(req.runId).length === 1);

    const secondOut = collector();
    const second = await executor().start(req, secondOut.sink);

    expect(second.handle).toBe(`docker:${nameOf(req.runId)}`);
    expect(containersOf(req.runId)).toHaveLength(1);
    expect(await second.done).toEqual({ exitCode: 0 });
    expect(await first.done).toEqual({ exitCode: 0 });
    expect(secondOut.text()).toContain('not captured');
    expect(firstOut.text().split('TASK [Announce]').length - 1).toBe(1);
  }, 60_000);

  it('adopting after the shim died waits for the container and reports its exit code', async () => {
    const slow = request('pause.yml', { extraVars: { pause_seconds: 4 } });
    // A relay in another process starts the task and exits, as a crashed relay would.
    const handle = execFileSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { DockerExecutor } from ${JSON.stringify(join(import.meta.dirname, '../../shared/adapters/relay/docker-executor.ts'))};
         const exec = await new DockerExecutor(JSON.parse(process.env.OPTIONS)).start(JSON.parse(process.env.REQUEST), () => {});
         process.stdout.write(exec.handle);
         process.exit(0);`,
      ],
      {
        encoding: 'utf8',
        env: {
          ...process.env,
          OPTIONS: JSON.stringify({ bin: 'podman', assetRoot: PLAYBOOKS, executorId: 'it-docker' }),
          REQUEST: JSON.stringify(slow),
        },
      },
    );
    await until('the container', () => containersOf(slow.runId).length === 1);
    // Then the shim and its CLI go too (the relay's container took them along); the container runs on.
    const marked = markedWith(slow.runId);
    expect(marked.length).toBeGreaterThanOrEqual(2);
    for (const pid of marked) process.kill(pid, 'SIGKILL');
    await until('the shim and the CLI to die', () => markedWith(slow.runId).length === 0);
    expect(containersOf(slow.runId)).toHaveLength(1);
    const out = collector();

    const adopted = await executor().adopt(handle, slow.workDir, out.sink);

    expect(await adopted.done).toEqual({ exitCode: 0 });
    expect(out.text()).toContain('supervisor is gone');
    expect(containersOf(slow.runId)).toEqual([]);
  }, 60_000);

  it('reports lost when neither the shim nor the container is left', async () => {
    const exec = await executor().adopt('docker:rw-nope/process:1:1', join(scratch), () => {});

    expect((await exec.done).lost).toMatch(/rw-nope no longer exists/);
  });

  it("reapOrphans removes this executor's containers whose run is not kept, and no other's", async () => {
    const name = (id: string) => `rw-${id}`;
    const stray = (id: string, executorId: string) =>
      execFileSync('podman', [
        'run',
        '-d',
        '--name',
        name(id),
        '--label',
        `remote-worker.run-id=${id}`,
        '--label',
        'remote-worker.managed=true',
        '--label',
        `remote-worker.executor=${executorId}`,
        BASE_IMAGE,
        'sleep',
        '60',
      ]);
    const suffix = randomUUID().slice(0, 6);
    stray(`keep-${suffix}`, 'it-reap');
    stray(`orphan-${suffix}`, 'it-reap');
    stray(`other-${suffix}`, 'someone-else');
    try {
      const reaped = await executor('it-reap').reapOrphans(new Set([`keep-${suffix}`]));

      expect(reaped).toEqual([`orphan-${suffix}`]);
      expect(containersOf(`orphan-${suffix}`)).toEqual([]);
      expect(containersOf(`keep-${suffix}`)).toEqual([name(`keep-${suffix}`)]);
      expect(containersOf(`other-${suffix}`)).toEqual([name(`other-${suffix}`)]);
    } finally {
      execFileSync('podman', ['rm', '-f', '-t', '0', name(`keep-${suffix}`), name(`other-${suffix}`)]);
    }
  }, 60_000);

  it('refuses what cannot be mounted or run before starting anything', async () => {
    const e = executor();
    const outside = request('echo-var.yml');

    await expect(
      e.start(
        { ...outside, spec: { ...outside.spec, asset: { kind: 'file', path: '/etc/passwd' } } },
        () => {},
      ),
    ).rejects.toThrow(/outside the asset root/);
    await expect(e.start({ ...request('echo-var.yml'), image: '' }, () => {})).rejects.toThrow(
      /needs a runner image/,
    );
    expect(() => new DockerExecutor({ volumes: ['/srv:/ansible/x'] })).toThrow(/outside \/ansible/);
  });
});

/** A stand-in `docker` for the failures a real engine cannot be asked to produce. */
const fakeCli = (body: string): string => fakeCliIn(scratch, body);

describe('DockerExecutor CLI failures', () => {
  it('translates them into domain errors', async () => {
    const down = fakeCli(
      'echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2; exit 1',
    );

    await expect(
      new DockerExecutor({ bin: down, assetRoot: PLAYBOOKS }).start(request('echo-var.yml'), () => {}),
    ).rejects.toBeInstanceOf(LauncherUnavailableError);
    await expect(
      new DockerExecutor({ bin: join(scratch, 'no-such-docker'), assetRoot: PLAYBOOKS }).start(
        request('echo-var.yml'),
        () => {},
      ),
    ).rejects.toBeInstanceOf(LaunchRejectedError);
  });
});
