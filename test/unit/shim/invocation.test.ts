import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commandLine, prepareInvocation } from '../../../runners/shim/invocation.ts';
import type { ContainerTarget } from '../../../shared/domain/container-target.ts';
import type { TaskSpec } from '../../../shared/domain/task-spec.ts';

const PLAYBOOK = join(import.meta.dirname, '../../fixtures/playbooks/echo-var.yml');
const SCRIPT = join(import.meta.dirname, '../../fixtures/assets/say hello.sh');

let workDir: string;
beforeEach(() => {
  workDir = mkdtempSync(join(tmpdir(), 'rw-invocation-'));
});
afterEach(() => {
  rmSync(workDir, { recursive: true, force: true });
});

const spec = (overrides: Partial<TaskSpec> = {}): TaskSpec => ({
  runId: 'run-1',
  kind: 'vm',
  asset: { kind: 'file', path: PLAYBOOK },
  assetType: 'playbook',
  inventory: { all: { hosts: { web: { ansible_host: '10.0.0.5' } } } },
  extraVars: { greeting: 'hi' },
  secretVars: [{ var: 'ansible_password', env: 'RW_SECRET_0' }],
  env: { PORTAINER_URL: 'https://p.example' },
  timeoutSeconds: 60,
  ...overrides,
});
const never = new AbortController().signal;
const read = (name: string): unknown => JSON.parse(readFileSync(join(workDir, name), 'utf8'));

describe('prepareInvocation', () => {
  it('points ssh at the control dir it is given, outside the private dir when that is too deep', async () => {
    const sshDir = join(workDir, 'elsewhere');

    const { toolEnv } = await prepareInvocation(
      spec(),
      workDir,
      { RW_SECRET_0: 'pw' },
      undefined,
      never,
      sshDir,
    );

    expect(toolEnv.ANSIBLE_SSH_CONTROL_PATH_DIR).toBe(sshDir);
  });

  it('writes the inventory and vars (secrets included) to 0600 files and passes only their paths', async () => {
    const { command, toolEnv } = await prepareInvocation(
      spec(),
      workDir,
      { RW_SECRET_0: 'pw' },
      undefined,
      never,
    );

    expect(command).toEqual({
      tool: 'ansible-playbook',
      args: ['-i', join(workDir, 'inventory.json'), '-e', `@${join(workDir, 'extra-vars.json')}`, PLAYBOOK],
    });
    expect(read('extra-vars.json')).toEqual({ greeting: 'hi', ansible_password: { __ansible_unsafe: 'pw' } });
    for (const name of readdirSync(workDir)) expect(statSync(join(workDir, name)).mode & 0o777).toBe(0o600);
    expect(commandLine(command.tool, command.args)).not.toContain('pw');
    expect(toolEnv).toMatchObject({
      PORTAINER_URL: 'https://p.example',
      NO_COLOR: '1',
      ANSIBLE_LOCAL_TEMP: join(workDir, 'ansible-local'),
      ANSIBLE_SSH_CONTROL_PATH_DIR: join(workDir, 'cp'),
    });
    // A vm play's modules run on the VM: the remote temp dir is not the shim's to choose.
    expect(toolEnv).not.toHaveProperty('ANSIBLE_REMOTE_TEMP');
  });

  it('runs a script through its wrapper with only the connection secrets, and an SSH key file', async () => {
    const { command } = await prepareInvocation(
      spec({ asset: { kind: 'file', path: SCRIPT }, assetType: 'script', sshKeyEnv: 'RW_SSH_KEY' }),
      workDir,
      { RW_SECRET_0: 'pw', RW_SSH_KEY: 'key' },
      undefined,
      never,
    );

    expect(command.args).toEqual([
      '-i',
      join(workDir, 'inventory.json'),
      '-e',
      JSON.stringify({ ansible_ssh_private_key_file: join(workDir, 'ssh-key') }),
      join(workDir, 'wrapper.yml'),
    ]);
    expect(read('inventory.json')).toMatchObject({
      all: { vars: { ansible_password: { __ansible_unsafe: 'pw' } } },
    });
    expect(readFileSync(join(workDir, 'ssh-key'), 'utf8')).toBe('key\n');
    expect(readdirSync(workDir)).not.toContain('extra-vars.json');
  });

  it('writes kubeconfig content to a private file both variables point at', async () => {
    const { command, toolEnv } = await prepareInvocation(
      spec({
        kind: 'k8s_op',
        operation: { action: 'helm_repo_add', repoName: 'eso', repoUrl: 'https://c.example/' },
      }),
      workDir,
      { KUBECONFIG: 'apiVersion: v1\nkind: Config\n' },
      undefined,
      never,
    );

    expect(command).toEqual({
      tool: 'helm',
      args: ['repo', 'add', '--force-update', 'eso', 'https://c.example/'],
    });
    expect(toolEnv.KUBECONFIG).toBe(join(workDir, 'kubeconfig'));
    expect(toolEnv.K8S_AUTH_KUBECONFIG).toBe(join(workDir, 'kubeconfig'));
    expect(toolEnv.ANSIBLE_REMOTE_TEMP).toBe(join(workDir, 'ansible-remote'));
  });

  it('in container mode names paths as the container sees them and keeps scratch in the container', async () => {
    const container: ContainerTarget = {
      bin: 'podman',
      name: 'rw-run-1',
      image: 'localhost/ansible:1',
      runArgs: [],
      assetMount: {
        host: join(import.meta.dirname, '../../fixtures/playbooks'),
        container: '/ansible/assets',
      },
    };

    const { command, toolEnv } = await prepareInvocation(
      spec(),
      workDir,
      { RW_SECRET_0: 'pw' },
      container,
      never,
    );

    expect(command.args).toEqual([
      '-i',
      '/ansible/inventory.json',
      '-e',
      '@/ansible/extra-vars.json',
      '/ansible/assets/echo-var.yml',
    ]);
    expect(toolEnv.ANSIBLE_LOCAL_TEMP).toBe('/tmp/remote-worker/ansible-local');
    // The read-only mount cannot get its mountpoint made by the engine: the shim makes it.
    expect(statSync(join(workDir, 'assets')).isDirectory()).toBe(true);
  });

  it('stops when the shim was told to stop while it prepared', async () => {
    const abort = new AbortController();
    abort.abort();

    await expect(
      prepareInvocation(spec(), workDir, { RW_SECRET_0: 'pw' }, undefined, abort.signal),
    ).rejects.toThrow('stopped before the tool ran');
  });
});

describe('commandLine', () => {
  it('quotes only the words that need it', () => {
    expect(commandLine('ansible-playbook', ['-i', '/w/inventory.json', '/srv/say hello.sh'])).toBe(
      "ansible-playbook -i /w/inventory.json '/srv/say hello.sh'",
    );
  });
});
