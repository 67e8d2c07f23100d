import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleShim, SHIM_ESBUILD_ARGS } from '../../runners/shim/bundle.ts';
import { CONTAINER_ASSET_ROOT } from '../../shared/adapters/relay/docker-target.ts';
import { inventoryForRun } from '../../shared/domain/inventory.ts';
import type { VmTarget } from '../../shared/domain/target.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import {
  execForm,
  finalStage,
  instructionsOf,
  keyValues,
  REPO,
  RUNNER_IMAGES,
  runnerDockerfile,
} from './dockerfile.ts';

/**
 * The task shim as the runner images carry and start it, without a Docker
 * engine: the bundle is built as `npm run build:shim` builds the file the
 * images' Dockerfiles copy, and started with the image's ENTRYPOINT argv and
 * the environment a cloud launcher hands a container
 * (test/runners/images.test.ts starts the real images on podman).
 *
 * test/integration/shim.test.ts covers the shim's behaviour (redaction,
 * signals, timeouts, wrappers, downloads); this file covers the packaging.
 *
 * What stands in for a container, and how it differs:
 * - The "container" is `node <bundle>` started with only the task's variables,
 *   the image's ENV (HOME pointed at a scratch dir) and PATH from this host.
 * - The bind mount `-v <asset root>:/ansible/assets:ro` is played by mapping
 *   the `/ansible/assets` prefix of the spec's asset path back to the mount's
 *   source directory: nothing else in the spec is changed.
 */

const execFileAsync = promisify(execFile);

interface Recorded {
  readonly argv: string[];
  readonly env: Record<string, string>;
}

let scratch: string;
let bundle: string;
let entrypoint: string[];
let imageEnv: Record<string, string>;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'rw-shim-entrypoint-'));
  bundle = bundleShim(REPO, join(scratch, 'dist', 'shim.mjs'));
  const winrm = finalStage(runnerDockerfile('ansible-winrm'));
  entrypoint = execForm(instructionsOf(winrm, 'ENTRYPOINT').at(-1)) ?? [];
  imageEnv = Object.fromEntries(
    instructionsOf(winrm, 'ENV')
      .flatMap(keyValues)
      .map(({ key, value }) => [key, value ?? '']),
  );
}, 60_000);

afterAll(() => {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

describe('the shim bundle of the runner images', () => {
  it('is what package.json build:shim builds, with the options the stack and the image tests use', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      scripts?: Record<string, string>;
    };

    expect(pkg.scripts?.['build:shim']).toBe(`esbuild ${SHIM_ESBUILD_ARGS.join(' ')}`);
    expect(SHIM_ESBUILD_ARGS).toContain('--outfile=dist/shim.mjs');
    expect(existsSync(bundle)).toBe(true);
  });

  it('is what every runner image copies and starts without arguments', () => {
    for (const image of RUNNER_IMAGES) {
      const stage = finalStage(runnerDockerfile(image.runner));
      const copies = instructionsOf(stage, 'COPY').map((c) => c.args);
      const entry = execForm(instructionsOf(stage, 'ENTRYPOINT').at(-1));
      const cmd = execForm(instructionsOf(stage, 'CMD').at(-1));

      expect(entry, image.runner).toEqual(['node', '/opt/remote-worker/shim.mjs']);
      expect(cmd ?? [], image.runner).toEqual([]);
      expect(copies, image.runner).toContain('dist/shim.mjs /opt/remote-worker/shim.mjs');
    }
  });
});

describe('the image entrypoint with a launcher environment', () => {
  /**
   * What the cloud launchers (ECS, ACI, Cloud Run, Kubernetes) hand the
   * image: the spec in RW_TASK with its asset under /ansible/assets, and each
   * secret by name. (The relay's docker executor no longer uses this
   * entrypoint: it runs the shim on the host and only the tool in the
   * container — test/integration/docker-executor.test.ts.)
   */
  function launcherEnvironment(spec: TaskSpec, assetRoot: string, secretEnv: Record<string, string>) {
    const hostPath = spec.asset.kind === 'file' ? spec.asset.path : '';
    const inContainer: TaskSpec = {
      ...spec,
      asset: { kind: 'file', path: `${CONTAINER_ASSET_ROOT}${hostPath.slice(assetRoot.length)}` },
    };
    return {
      argv: ['-v', `${assetRoot}:${CONTAINER_ASSET_ROOT}:ro`],
      env: { RW_TASK: JSON.stringify(inContainer), ...secretEnv },
    } satisfies Recorded;
  }

  /** Start the entrypoint as the container would: its argv, only the passed variables, the image's ENV. */
  function startContainer(run: Recorded) {
    const mount = run.argv[run.argv.indexOf('-v') + 1] ?? '';
    const [source, target] = mount.split(':');
    expect(target).toBe(CONTAINER_ASSET_ROOT);
    const task = JSON.parse(run.env.RW_TASK ?? '{}') as TaskSpec;
    const inContainer = task.asset.kind === 'file' ? task.asset.path : '';
    const mapped: TaskSpec = {
      ...task,
      asset: { kind: 'file', path: `${source}${inContainer.slice(CONTAINER_ASSET_ROOT.length)}` },
    };
    const home = mkdtempSync(join(scratch, 'home-'));
    const [command, ...args] = entrypoint.map((a) => (a === '/opt/remote-worker/shim.mjs' ? bundle : a));
    const child = spawn(command === 'node' ? process.execPath : (command ?? ''), args, {
      cwd: home,
      env: {
        ...imageEnv,
        HOME: home,
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ...run.env,
        RW_TASK: JSON.stringify(mapped),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString();
    });
    const exit = new Promise<number | null>((done) => child.once('close', (code) => done(code)));
    return { exit, output: () => output };
  }

  const localVm: VmTarget = {
    id: 'lab-vm',
    kind: 'vm',
    cloud: 'local',
    name: 'lab vm',
    address: '127.0.0.1',
    connection: 'local',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  };

  function assetRootWith(...paths: string[]): string {
    const root = mkdtempSync(join(scratch, 'assets-'));
    for (const p of paths) {
      mkdirSync(join(root, p, '..'), { recursive: true });
      cpSync(join(REPO, 'examples/playbooks', p), join(root, p));
    }
    return root;
  }

  it('runs a real playbook with its secret passed by name and redacted', async () => {
    const root = assetRootWith('hello/secret.yml');
    const secret = `tok-${Date.now()}-s3cr3t`;
    const spec: TaskSpec = {
      runId: 'entry-playbook',
      kind: 'vm',
      asset: { kind: 'file', path: join(root, 'hello/secret.yml') },
      assetType: 'playbook',
      inventory: inventoryForRun('vm', localVm),
      extraVars: {},
      secretVars: [{ var: 'api_token', env: 'RW_SECRET_0' }],
      timeoutSeconds: 120,
    };

    const run = launcherEnvironment(spec, root, { RW_SECRET_0: secret });
    const container = startContainer(run);
    const code = await container.exit;

    expect(code).toBe(0);
    expect(container.output()).toContain('token is ********');
    expect(container.output()).not.toContain(secret);
    expect(container.output().trimEnd().split('\n').at(-1)).toBe(
      'remote-worker: ansible-playbook exited with code 0',
    );
  });

  it('runs the .sh example through its wrapper playbook', async () => {
    const root = assetRootWith('scripts/disk-report.sh');
    const spec: TaskSpec = {
      runId: 'entry-script',
      kind: 'vm',
      asset: { kind: 'file', path: join(root, 'scripts/disk-report.sh') },
      assetType: 'script',
      inventory: inventoryForRun('vm', localVm),
      extraVars: {},
      secretVars: [],
      timeoutSeconds: 120,
    };

    const run = launcherEnvironment(spec, root, {});
    const container = startContainer(run);
    const code = await container.exit;

    expect(container.output()).toContain('disk usage (local file systems):');
    expect(container.output()).toMatch(/remote-worker: running ansible-playbook -i \S+ \S+wrapper\.yml/);
    expect(code).toBe(0);
  });

  it('stops with exit code 125 and says why when started without a task', async () => {
    const [command, ...args] = entrypoint.map((a) => (a === '/opt/remote-worker/shim.mjs' ? bundle : a));
    const started = execFileAsync(command === 'node' ? process.execPath : (command ?? ''), args, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: scratch },
    });

    const failure = await started.then(
      () => undefined,
      (error: { code?: number; stdout?: string }) => error,
    );

    expect(failure?.code).toBe(125);
    expect(failure?.stdout).toContain('remote-worker: set RW_TASK or RW_TASK_FILE');
  });
});
