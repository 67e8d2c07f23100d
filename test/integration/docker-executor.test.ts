import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerExecutor, dockerAvailable } from '../../shared/adapters/relay/docker-executor.ts';
import { LauncherUnavailableError, LaunchRejectedError } from '../../shared/domain/errors.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import type { ExecutionRequest } from '../../shared/ports/executor.ts';
import type { LogLineInput } from '../../shared/ports/log-store.ts';

/**
 * There is no Docker engine here, so the executor drives a stand-in `docker`
 * program that records every argv and environment and keeps containers in a
 * JSON file. Where it differs from the real CLI:
 * - a container does not run anything: it "prints" the configured lines, one
 *   every `lineGapMs`, and exits with the configured code after `durationMs`;
 * - `stop` marks the container exited with 143 at once (no grace to wait out);
 * - `logs --timestamps` stamps are millisecond times padded to docker's fixed
 *   nanosecond width, and `--since` is inclusive, as with the real engine;
 * - only the flags and `--format` strings the executor uses are understood.
 */
const FAKE_DOCKER = String.raw`
import fs from 'node:fs';
const STATE = __STATE__;
const argv = process.argv.slice(2);
fs.appendFileSync(STATE + '/calls.jsonl', JSON.stringify({ argv, env: process.env }) + '\n');
const config = JSON.parse(fs.readFileSync(STATE + '/config.json', 'utf8'));
const file = STATE + '/containers.json';
const load = () => { try { return JSON.parse(fs.readFileSync(file, 'utf8')); } catch { return {}; } };
const save = (all) => { const tmp = file + '.' + process.pid; fs.writeFileSync(tmp, JSON.stringify(all)); fs.renameSync(tmp, file); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const stamp = (ms) => new Date(ms).toISOString().replace('Z', '000000Z');
const state = (c) => c.stoppedAt !== undefined ? { running: false, code: c.stopCode }
  : Date.now() - c.startedAt >= c.durationMs ? { running: false, code: c.exitCode } : { running: true };
const fail = (message, code = 1) => { process.stderr.write(message + '\n'); process.exit(code); };
const [command, ...rest] = argv;
const last = rest[rest.length - 1];
if (config.hang) await sleep(60_000);
if (config.daemonDown) fail('Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?');
switch (command) {
  case 'version': console.log('24.0.7'); break;
  case 'run': {
    const name = rest[rest.indexOf('--name') + 1];
    const labels = {};
    rest.forEach((a, i) => { if (a === '--label') { const [k, ...v] = rest[i + 1].split('='); labels[k] = v.join('='); } });
    const all = load();
    if (all[name]) fail('docker: Error response from daemon: Conflict. The container name "/' + name + '" is already in use by container "abc123".', 125);
    all[name] = { name, labels, startedAt: Date.now(), durationMs: config.durationMs, exitCode: config.exitCode, lines: config.lines, lineGapMs: config.lineGapMs };
    save(all);
    console.log('c0ffee' + name);
    break;
  }
  case 'logs': {
    const follow = rest.includes('--follow');
    const since = rest.includes('--since') ? rest[rest.indexOf('--since') + 1] : undefined;
    let next = 0;
    for (;;) {
      const c = load()[last];
      if (!c) fail('Error response from daemon: No such container: ' + last);
      const running = state(c).running;
      while (next < c.lines.length && c.startedAt + next * c.lineGapMs <= Date.now()) {
        const at = stamp(c.startedAt + next * c.lineGapMs);
        if (since === undefined || at >= since) process.stdout.write(at + ' ' + c.lines[next] + '\n');
        next++;
      }
      if (!follow || (!running && next >= c.lines.length) || (!running && c.stoppedAt !== undefined)) break;
      await sleep(10);
    }
    break;
  }
  case 'wait': {
    for (;;) {
      const c = load()[last];
      if (!c) fail('Error response from daemon: No such container: ' + last);
      const s = state(c);
      if (!s.running) { console.log(String(s.code)); break; }
      await sleep(10);
    }
    break;
  }
  case 'stop': {
    const all = load();
    const c = all[last];
    if (!c) fail('Error response from daemon: No such container: ' + last);
    if (state(c).running) { c.stoppedAt = Date.now(); c.stopCode = 143; save(all); }
    console.log(last);
    break;
  }
  case 'inspect': {
    const c = load()[last];
    if (!c) fail('Error: No such object: ' + last);
    const s = state(c);
    console.log(JSON.stringify({ Status: s.running ? 'running' : 'exited', Running: s.running, ExitCode: s.running ? 0 : s.code }));
    break;
  }
  case 'ps': {
    for (const c of Object.values(load())) {
      if (c.labels['remote-worker.managed'] === 'true') console.log(c.name + '\t' + c.labels['remote-worker.run-id']);
    }
    break;
  }
  case 'rm': {
    const all = load();
    delete all[last];
    save(all);
    console.log(last);
    break;
  }
  default: fail('fake docker: unknown command ' + command);
}
`;

interface FakeConfig {
  lines: string[];
  exitCode: number;
  durationMs: number;
  lineGapMs: number;
  daemonDown?: boolean;
  hang?: boolean;
}

interface Call {
  readonly argv: string[];
  readonly env: Record<string, string>;
}

let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'rw-docker-test-'));
});
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function fakeDocker(config: Partial<FakeConfig> = {}) {
  const dir = mkdtempSync(join(scratch, 'docker-'));
  const bin = join(dir, 'docker');
  writeFileSync(bin, `#!${process.execPath}\n${FAKE_DOCKER.replace('__STATE__', JSON.stringify(dir))}`);
  chmodSync(bin, 0o755);
  const configure = (next: Partial<FakeConfig>): void =>
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({ lines: [], exitCode: 0, durationMs: 0, lineGapMs: 5, ...config, ...next }),
    );
  configure({});
  const calls = (): Call[] =>
    readFileSync(join(dir, 'calls.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((row) => JSON.parse(row) as Call);
  const containers = (): Record<string, { startedAt: number; lineGapMs: number }> => {
    try {
      return JSON.parse(readFileSync(join(dir, 'containers.json'), 'utf8')) as Record<
        string,
        { startedAt: number; lineGapMs: number }
      >;
    } catch {
      return {};
    }
  };
  return { bin, dir, calls, configure, containers, commands: () => calls().map((c) => c.argv) };
}

function collector() {
  const lines: LogLineInput[] = [];
  return {
    lines,
    sink: (batch: readonly LogLineInput[]) => void lines.push(...batch),
    texts: () => lines.map((l) => l.text),
  };
}

const assetRoot = '/srv/rw-assets';

function request(runId: string, overrides: Partial<ExecutionRequest> = {}): ExecutionRequest {
  const spec: TaskSpec = {
    runId,
    kind: 'vm',
    asset: { kind: 'file', path: `${assetRoot}/hello/site.yml` },
    assetType: 'playbook',
    inventory: { all: { hosts: { 'web-1': { ansible_host: '10.0.0.5' } } } },
    extraVars: { ansible_password: 'winrm-extra-var-pw' },
    secretVars: [{ var: 'db_password', env: 'RW_SECRET_0' }],
    timeoutSeconds: 600,
  };
  const workDir = join(scratch, `work-${randomUUID()}`);
  mkdirSync(workDir);
  return {
    runId,
    image: 'chrweav/ansible-winrm:latest',
    spec,
    secretEnv: { RW_SECRET_0: 'the-secret-value' },
    env: { PORTAINER_URL: 'https://portainer.lan' },
    workDir,
    ...overrides,
  };
}

describe('DockerExecutor', () => {
  it('runs the container with the exact arguments, passing every value by name only', async () => {
    const docker = fakeDocker({
      lines: ['PLAY [all]', 'ok: [web-1]', 'remote-worker: ansible-playbook exited with code 3'],
      exitCode: 3,
      durationMs: 100,
    });
    const executor = new DockerExecutor({
      bin: docker.bin,
      network: 'rw-net',
      assetRoot,
      memory: '1g',
      cpus: '1.5',
    });
    const out = collector();

    const exec = await executor.start(request('01HXYZ-Run_A'), out.sink);
    const result = await exec.done;

    const run = docker.calls().find((c) => c.argv[0] === 'run');
    expect(run?.argv).toEqual([
      'run',
      '-d',
      '--name',
      'rw-01hxyz-run_a',
      '--label',
      'remote-worker.run-id=01HXYZ-Run_A',
      '--label',
      'remote-worker.managed=true',
      '--network',
      'rw-net',
      '--init',
      '--memory',
      '1g',
      '--cpus',
      '1.5',
      '-v',
      `${assetRoot}:/ansible/assets:ro`,
      '-e',
      'RW_TASK',
      '-e',
      'PORTAINER_URL',
      '-e',
      'RW_SECRET_0',
      'chrweav/ansible-winrm:latest',
    ]);
    expect(run?.env.RW_SECRET_0).toBe('the-secret-value');
    expect(run?.env.PORTAINER_URL).toBe('https://portainer.lan');
    const spec = JSON.parse(run?.env.RW_TASK ?? '{}') as TaskSpec;
    expect(spec.asset).toEqual({ kind: 'file', path: '/ansible/assets/hello/site.yml' });
    expect(spec.secretVars).toEqual([{ var: 'db_password', env: 'RW_SECRET_0' }]);
    for (const call of docker.calls()) {
      expect(call.argv.join(' ')).not.toContain('the-secret-value');
      expect(call.argv.join(' ')).not.toContain('winrm-extra-var-pw');
    }
    expect(exec.handle).toBe('docker:rw-01hxyz-run_a');
    expect(result).toEqual({ exitCode: 3 });
    expect(out.texts()).toEqual([
      'PLAY [all]',
      'ok: [web-1]',
      'remote-worker: ansible-playbook exited with code 3',
    ]);
    expect(out.lines.map((l) => l.stream)).toEqual(['stdout', 'stdout', 'system']);
    expect(out.lines[0]?.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(docker.commands()).toContainEqual(['logs', '--follow', '--timestamps', 'rw-01hxyz-run_a']);
    expect(docker.commands()).toContainEqual(['wait', 'rw-01hxyz-run_a']);
    expect(docker.commands().at(-1)).toEqual(['rm', '-f', 'rw-01hxyz-run_a']);
    expect(docker.containers()).toEqual({});
  });

  it("mounts the asset's own directory when no asset root is configured", async () => {
    const docker = fakeDocker();
    const executor = new DockerExecutor({ bin: docker.bin });

    const exec = await executor.start(
      request('run-b', {
        spec: {
          ...request('run-b').spec,
          asset: { kind: 'file', path: '/data/x/deploy.sh' },
          assetType: 'script',
        },
      }),
      () => {},
    );
    await exec.done;

    const run = docker.calls().find((c) => c.argv[0] === 'run');
    expect(run?.argv.slice(run.argv.indexOf('--network'), run.argv.indexOf('-e'))).toEqual([
      '--network',
      'bridge',
      '--init',
      '-v',
      '/data/x:/ansible/assets:ro',
    ]);
    expect((JSON.parse(run?.env.RW_TASK ?? '{}') as TaskSpec).asset).toEqual({
      kind: 'file',
      path: '/ansible/assets/deploy.sh',
    });
  });

  it('kill stops the container with the grace in seconds and removes it', async () => {
    const docker = fakeDocker({ lines: ['working'], durationMs: 60_000 });
    const executor = new DockerExecutor({ bin: docker.bin });
    const exec = await executor.start(request('run-kill'), () => {});

    await exec.kill(1500);

    expect(docker.commands()).toContainEqual(['stop', '-t', '2', 'rw-run-kill']);
    expect(await exec.done).toEqual({ exitCode: 143 });
    expect(docker.commands().at(-1)).toEqual(['rm', '-f', 'rw-run-kill']);
  });

  it('adopts a running container and streams it to the end', async () => {
    const docker = fakeDocker({
      lines: ['one', 'two', 'three'],
      durationMs: 300,
      lineGapMs: 100,
      exitCode: 0,
    });
    execFileSync(docker.bin, [
      'run',
      '-d',
      '--name',
      'rw-run-adopt',
      '--label',
      'remote-worker.run-id=run-adopt',
    ]);
    const out = collector();

    const exec = await new DockerExecutor({ bin: docker.bin }).adopt(
      'docker:rw-run-adopt',
      request('run-adopt').workDir,
      out.sink,
    );

    expect(await exec.done).toEqual({ exitCode: 0 });
    expect(out.texts()).toEqual(['one', 'two', 'three']);
  });

  it('adopting an exited container replays only what was not shipped, then reports its code', async () => {
    const docker = fakeDocker({
      lines: ['one', 'two', 'three', 'four'],
      durationMs: 0,
      lineGapMs: 5,
      exitCode: 7,
    });
    execFileSync(docker.bin, ['run', '-d', '--name', 'rw-run-resume']);
    const { startedAt, lineGapMs } = docker.containers()['rw-run-resume']!;
    const { workDir } = request('run-resume');
    // As if a relay had shipped "one" and "two" before it crashed.
    writeFileSync(
      join(workDir, 'docker.since'),
      new Date(startedAt + lineGapMs).toISOString().replace('Z', '000000Z'),
    );
    await new Promise((r) => setTimeout(r, 30));
    const out = collector();

    const exec = await new DockerExecutor({ bin: docker.bin }).adopt(
      'docker:rw-run-resume',
      workDir,
      out.sink,
    );

    expect(await exec.done).toEqual({ exitCode: 7 });
    expect(out.texts()).toEqual(['three', 'four']);
    expect(docker.commands()).toContainEqual([
      'logs',
      '--follow',
      '--timestamps',
      '--since',
      new Date(startedAt + lineGapMs).toISOString().replace('Z', '000000Z'),
      'rw-run-resume',
    ]);
    expect(docker.containers()).toEqual({});
  });

  it('reports lost when the container is gone', async () => {
    const docker = fakeDocker();

    const exec = await new DockerExecutor({ bin: docker.bin }).adopt(
      'docker:rw-nope',
      request('x').workDir,
      () => {},
    );

    expect((await exec.done).lost).toMatch(/rw-nope no longer exists/);
  });

  it('a second start for the same run adopts the first container instead of failing', async () => {
    const docker = fakeDocker({ lines: ['only once'], durationMs: 60_000, lineGapMs: 1 });
    const first = await new DockerExecutor({ bin: docker.bin }).start(request('run-twice'), () => {});

    // A redelivered message handled by a restarted relay: a fresh executor, same run.
    const second = await new DockerExecutor({ bin: docker.bin }).start(request('run-twice'), () => {});
    await second.kill(0);

    expect(second.handle).toBe(first.handle);
    expect(docker.commands().filter((a) => a[0] === 'run')).toHaveLength(2);
    expect(docker.commands()).toContainEqual(['inspect', '--format', '{{json .State}}', 'rw-run-twice']);
    expect(await second.done).toEqual({ exitCode: 143 });
    await first.done;
  });

  it('reapOrphans removes managed containers whose run is not kept', async () => {
    const docker = fakeDocker({ durationMs: 60_000 });
    const executor = new DockerExecutor({ bin: docker.bin });
    const keep = await executor.start(request('run-keep'), () => {});
    const orphan = await executor.start(request('run-orphan'), () => {});

    const reaped = await executor.reapOrphans(new Set(['run-keep']));

    expect(reaped).toEqual(['run-orphan']);
    expect(docker.commands()).toContainEqual([
      'ps',
      '-a',
      '--filter',
      'label=remote-worker.managed=true',
      '--format',
      '{{.Names}}\t{{.Label "remote-worker.run-id"}}',
    ]);
    expect(docker.commands()).toContainEqual(['rm', '-f', 'rw-run-orphan']);
    expect(Object.keys(docker.containers())).toEqual(['rw-run-keep']);
    await orphan.done;
    await keep.kill(0);
  });

  it('translates CLI failures into domain errors', async () => {
    const down = fakeDocker({ daemonDown: true });
    const executor = new DockerExecutor({ bin: down.bin, assetRoot });

    await expect(executor.start(request('run-e1'), () => {})).rejects.toBeInstanceOf(
      LauncherUnavailableError,
    );
    await expect(
      new DockerExecutor({ bin: join(scratch, 'no-such-docker') }).start(request('run-e2'), () => {}),
    ).rejects.toBeInstanceOf(LaunchRejectedError);
    await expect(
      executor.start(
        request('run-e3', {
          spec: { ...request('run-e3').spec, asset: { kind: 'file', path: '/etc/passwd' } },
        }),
        () => {},
      ),
    ).rejects.toThrow(/outside the asset root/);
    await expect(executor.start(request('run-e4', { secretEnv: { 'A=B': 'x' } }), () => {})).rejects.toThrow(
      /Invalid environment variable name/,
    );
    await expect(executor.start(request('run-e5', { image: '' }), () => {})).rejects.toThrow(
      /needs a runner image/,
    );
  });
});

describe('dockerAvailable', () => {
  it('is true only when the server answers', async () => {
    const up = fakeDocker();
    const down = fakeDocker({ daemonDown: true });

    expect(await dockerAvailable(up.bin)).toBe(true);
    expect(await dockerAvailable(down.bin)).toBe(false);
    expect(await dockerAvailable(join(scratch, 'missing-docker'))).toBe(false);
    expect(up.commands()).toEqual([['version', '--format', '{{.Server.Version}}']]);
  });

  it('gives up on a CLI that hangs', async () => {
    const hung = fakeDocker({ hang: true });
    const started = Date.now();

    expect(await dockerAvailable(hung.bin, 300)).toBe(false);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
