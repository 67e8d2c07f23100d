import { execFile, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PYWINRM_MISSING } from '../../runners/shim/preflight.ts';
import { LOCALHOST_VARS } from '../../shared/domain/inventory.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import {
  ENGINE,
  ensureRunnerImage,
  IMAGE_BUILD_TIMEOUT_MS,
  type RunnerImage,
  type RunnerImageName,
} from '../support/runner-images.ts';
import { REPO } from './dockerfile.ts';

/**
 * The runner images built from runners/ on the real container engine (podman,
 * from the local Debian base: no registry), then started as every backend
 * starts them — no command, the task in RW_TASK passed by name, the asset
 * bind-mounted under /ansible/assets — checking each image's tool and the
 * shim's entrypoint contract, including its preflight refusals.
 *
 * Containers run with `--network none` except the helm one, which reaches a
 * chart repository served by this test on the host's loopback (`--network host`).
 */

const execFileAsync = promisify(execFile);
const ASSETS = join(REPO, 'test/fixtures/playbooks');
const IN_CONTAINER = '/ansible/assets';

const images = {} as Record<RunnerImageName, RunnerImage>;

beforeAll(async () => {
  // One after the other: the two ansible images share their first (largest) layer.
  for (const name of ['ansible-winrm', 'ansible-cloud', 'helm-kubectl'] as const) {
    images[name] = await ensureRunnerImage(name);
    const { built, elapsedMs, sizeBytes, tag } = images[name];
    console.info(
      `runner image ${tag}: ${built ? 'built' : 'already there'} in ${(elapsedMs / 1000).toFixed(1)} s, ${(sizeBytes / 1e6).toFixed(0)} MB`,
    );
  }
}, IMAGE_BUILD_TIMEOUT_MS);

interface ContainerRun {
  readonly code: number | null;
  readonly out: string;
}

/** `podman run --rm` with the given environment passed by name (never `-e NAME=value`). */
function runContainer(
  image: string,
  options: { env?: Record<string, string>; args?: readonly string[]; command?: readonly string[] } = {},
): Promise<ContainerRun> {
  const env = options.env ?? {};
  const argv = [
    'run',
    '--rm',
    ...(options.args ?? ['--network', 'none']),
    '-v',
    `${ASSETS}:${IN_CONTAINER}:ro`,
    ...Object.keys(env).flatMap((name) => ['-e', name]),
    ...(options.command === undefined ? [image] : ['--entrypoint', options.command[0] ?? '', image]),
    ...(options.command?.slice(1) ?? []),
  ];
  const child = spawn(ENGINE, argv, {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((done) => child.once('close', (code) => done({ code, out })));
}

function spec(overrides: Partial<TaskSpec> = {}): TaskSpec {
  return {
    runId: 'run-image-test',
    kind: 'cluster_play',
    asset: { kind: 'file', path: `${IN_CONTAINER}/echo-var.yml` },
    assetType: 'playbook',
    inventory: { all: { hosts: { localhost: { ...LOCALHOST_VARS } } } },
    extraVars: { greeting: 'hello from the image' },
    secretVars: [],
    timeoutSeconds: 120,
    ...overrides,
  };
}

const winrmSpec = (): TaskSpec =>
  spec({
    kind: 'vm',
    asset: { kind: 'file', path: `${IN_CONTAINER}/win-ping.yml` },
    inventory: {
      all: {
        hosts: {
          'win-1': {
            ansible_host: '127.0.0.1',
            ansible_port: 1,
            ansible_connection: 'winrm',
            ansible_winrm_transport: 'ntlm',
            ansible_user: 'Administrator',
          },
        },
      },
    },
  });

const inspect = async (image: string, format: string): Promise<string> =>
  (await execFileAsync(ENGINE, ['image', 'inspect', '--format', format, image])).stdout.trim();

describe.each(['ansible-winrm', 'ansible-cloud', 'helm-kubectl'] as const)('the %s image', (name) => {
  it('runs as uid 10001 with the shim as its entrypoint and no command, labelled with its local base', async () => {
    const tag = images[name].tag;

    expect(await inspect(tag, '{{.Config.User}}')).toBe('10001:10001');
    expect(JSON.parse(await inspect(tag, '{{json .Config.Entrypoint}}'))).toEqual([
      'node',
      '/opt/remote-worker/shim.mjs',
    ]);
    expect(await inspect(tag, '{{index .Labels "org.opencontainers.image.title"}}')).toBe(
      `remote-worker-${name}`,
    );
    expect(await inspect(tag, '{{index .Labels "org.opencontainers.image.base.name"}}')).toMatch(
      /^localhost\/node:22\.\d+\.\d+-bookworm$/,
    );
  });

  it('exits 125 with a clear line when started without a task', async () => {
    const run = await runContainer(images[name].tag);

    expect(run.code, run.out).toBe(125);
    expect(run.out).toContain('remote-worker: set RW_TASK or RW_TASK_FILE');
  });

  it('runs Node 22, the major of the Lambda runtime and of local mode', async () => {
    const run = await runContainer(images[name].tag, { command: ['node', '--version'] });

    expect(run.code, run.out).toBe(0);
    expect(Number(/^v(\d+)\./.exec(run.out.trim())?.[1])).toBe(22);
  });
});

describe.each(['ansible-winrm', 'ansible-cloud'] as const)('the %s image with a playbook', (name) => {
  it('has ansible-playbook', async () => {
    const run = await runContainer(images[name].tag, { command: ['ansible-playbook', '--version'] });

    expect(run.code, run.out).toBe(0);
    expect(run.out).toMatch(/^ansible-playbook \[core 2\.\d+\.\d+\]/);
  });

  it('runs a localhost play from RW_TASK and prints its output, exit 0', async () => {
    const run = await runContainer(images[name].tag, { env: { RW_TASK: JSON.stringify(spec()) } });

    expect(run.code, run.out).toBe(0);
    expect(run.out).toContain(`remote-worker: running ansible-playbook -i`);
    expect(run.out).toContain('"msg": "greeting is hello from the image"');
    expect(run.out.trimEnd().split('\n').at(-1)).toBe('remote-worker: ansible-playbook exited with code 0');
  });

  it('ends a failing play with its exit code', async () => {
    const run = await runContainer(images[name].tag, {
      env: { RW_TASK: JSON.stringify(spec({ asset: { kind: 'file', path: `${IN_CONTAINER}/fail.yml` } })) },
    });

    expect(run.code, run.out).toBe(2);
    expect(run.out.trimEnd().split('\n').at(-1)).toBe('remote-worker: ansible-playbook exited with code 2');
  });
});

describe('pywinrm in the images', () => {
  it('is importable in ansible-winrm, and a WinRM run gets past the preflight to the connection', async () => {
    const imported = await runContainer(images['ansible-winrm'].tag, {
      command: ['python3', '-c', 'import winrm; print("winrm ok")'],
    });
    const run = await runContainer(images['ansible-winrm'].tag, {
      env: { RW_TASK: JSON.stringify(winrmSpec()) },
    });

    expect(imported.out).toContain('winrm ok');
    expect(run.out).not.toContain(PYWINRM_MISSING);
    expect(run.out).toContain('remote-worker: running ansible-playbook');
    // Nothing listens on 127.0.0.1:1 in the container: Ansible reports the host unreachable (exit 4).
    expect(run.out).toMatch(/UNREACHABLE!/);
    expect(run.code, run.out).toBe(4);
  });

  it('is missing from ansible-cloud, where the same WinRM run stops with the seeds’ message, exit 127', async () => {
    const run = await runContainer(images['ansible-cloud'].tag, {
      env: { RW_TASK: JSON.stringify(winrmSpec()) },
    });

    expect(run.code, run.out).toBe(127);
    expect(run.out).toContain(`remote-worker: ${PYWINRM_MISSING} for /usr/bin/python3`);
    expect(run.out).not.toContain('running ansible-playbook');
  });
});

describe.each(['ansible-cloud', 'helm-kubectl'] as const)('the %s image with kubectl and helm', (name) => {
  it('has kubectl and helm', async () => {
    const kubectl = await runContainer(images[name].tag, { command: ['kubectl', 'version', '--client'] });
    const helm = await runContainer(images[name].tag, { command: ['helm', 'version', '--short'] });

    expect(kubectl.code, kubectl.out).toBe(0);
    expect(kubectl.out).toMatch(/Client Version: v1\.\d+\.\d+/);
    expect(helm.code, helm.out).toBe(0);
    expect(helm.out).toMatch(/^v3\.\d+\.\d+/);
  });
});

describe('the helm-kubectl image with a k8s operation', () => {
  let server: Server;
  let repoUrl: string;
  const requests: string[] = [];

  beforeAll(async () => {
    // A chart repository is an index.yaml over HTTP; an empty one is enough for `helm repo add`.
    server = createServer((req, res) => {
      requests.push(req.url ?? '');
      if (req.url === '/charts/index.yaml') {
        res.setHeader('content-type', 'application/x-yaml');
        res.end('apiVersion: v1\nentries: {}\ngenerated: "2026-12-01T00:00:00Z"\n');
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    repoUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/charts`;
  });

  afterAll(async () => {
    await new Promise<void>((done) => server.close(() => done()));
  });

  it('runs helm repo add from RW_TASK against a chart repository, exit 0', async () => {
    const task = spec({
      kind: 'k8s_op',
      operation: { action: 'helm_repo_add', repoName: 'local', repoUrl },
    });

    const run = await runContainer(images['helm-kubectl'].tag, {
      env: { RW_TASK: JSON.stringify(task) },
      args: ['--network', 'host'],
    });

    expect(run.code, run.out).toBe(0);
    expect(run.out).toContain(`remote-worker: running helm repo add --force-update local ${repoUrl}`);
    expect(run.out).toContain('"local" has been added to your repositories');
    expect(requests).toContain('/charts/index.yaml');
  });

  it('stops a playbook run with exit 127: this image has no ansible-playbook', async () => {
    const run = await runContainer(images['helm-kubectl'].tag, { env: { RW_TASK: JSON.stringify(spec()) } });

    expect(run.code, run.out).toBe(127);
    expect(run.out).toContain('remote-worker: ansible-playbook is not installed in this image');
  });
});
