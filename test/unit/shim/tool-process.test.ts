import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signalGroup, startTool } from '../../../runners/shim/tool-process.ts';
import type { ContainerTarget } from '../../../shared/domain/container-target.ts';
import type { TaskSpec } from '../../../shared/domain/task-spec.ts';
import { fakeCli } from '../../support/fake-cli.ts';

let workDir: string;
beforeEach(() => {
  workDir = mkdtempSync(join(tmpdir(), 'rw-tool-process-'));
});
afterEach(() => {
  rmSync(workDir, { recursive: true, force: true });
});

const spec: TaskSpec = {
  runId: 'run-1',
  kind: 'k8s_op',
  asset: { kind: 'file', path: '/srv/m.yml' },
  assetType: 'playbook',
  inventory: { all: { hosts: {} } },
  extraVars: {},
  secretVars: [{ var: 'db_password', env: 'RW_SECRET_0' }],
  secretEnvNames: ['PORTAINER_API_TOKEN'],
  sshKeyEnv: 'RW_SSH_KEY',
  operation: { action: 'apply' },
  timeoutSeconds: 60,
};
const env = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  RW_TASK: '{}',
  RW_SECRET_0: 'bound-secret',
  RW_SSH_KEY: 'key-secret',
  PORTAINER_API_TOKEN: 'token-secret',
};
const output = async (child: ReturnType<typeof startTool>['child']): Promise<string> => {
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  await new Promise((resolve) => child.once('close', resolve));
  return text;
};

describe('startTool in process mode', () => {
  it('runs the tool in its own group with the secret env it reads by name, never the bound ones', async () => {
    const { child } = startTool(
      spec,
      workDir,
      env,
      undefined,
      { command: { tool: 'kubectl', args: ['version', '--client'] }, toolEnv: { NO_COLOR: '1' } },
      () => {},
    );
    const pid = child.pid ?? 0;
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');

    expect(await output(child)).toMatch(/Client Version/);
    expect(environ).toEqual(expect.arrayContaining(['NO_COLOR=1', 'PORTAINER_API_TOKEN=token-secret']));
    expect(environ.join('\n')).not.toMatch(/bound-secret|key-secret|RW_TASK=/);
    expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2])).toBe(pid);
  });
});

describe('startTool in container mode', () => {
  it('hands the CLI no secret and the container the secret env as 0600 files', async () => {
    const cli = fakeCli(workDir, 'echo "ARGS $*"; env');
    const container: ContainerTarget = {
      bin: cli,
      name: 'rw-run-1',
      image: 'localhost/ansible:1',
      runArgs: [],
    };
    const said: string[] = [];

    const { child, stopper } = startTool(
      spec,
      workDir,
      env,
      container,
      { command: { tool: 'kubectl', args: ['apply', '-f', '/ansible/m.yml'] }, toolEnv: { NO_COLOR: '1' } },
      (m) => said.push(m),
    );
    const text = await output(child);

    expect(text).toMatch(
      /^ARGS run --rm --name rw-run-1 .* localhost\/ansible:1 -c .* kubectl apply -f \/ansible\/m.yml$/m,
    );
    expect(text).not.toMatch(/bound-secret|key-secret|token-secret/);
    expect(readFileSync(join(workDir, 'env', 'PORTAINER_API_TOKEN'), 'utf8')).toBe('token-secret');
    expect(statSync(join(workDir, 'env', 'PORTAINER_API_TOKEN')).mode & 0o777).toBe(0o600);
    expect(said).toEqual(['in container rw-run-1 from image localhost/ansible:1']);
    expect(stopper).toBeTypeOf('function');
  });
});

describe('signalGroup', () => {
  it('is false for a group that is gone', () => {
    expect(signalGroup(2 ** 22 + 1, 'SIGTERM')).toBe(false);
  });
});
