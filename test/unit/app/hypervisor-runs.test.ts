import { afterEach, describe, expect, it } from 'vitest';
import { submitBatch } from '../../../shared/app/batches.ts';
import { submitRun } from '../../../shared/app/runs.ts';
import { prepareTask } from '../../../shared/app/task-prep.ts';
import {
  LaunchRejectedError,
  NotFoundError,
  type SelectionRefusedError,
  ValidationError,
} from '../../../shared/domain/errors.ts';
import { SubmitBatchBody, SubmitRunBody } from '../../../shared/http/request-schemas.ts';
import type { SecretSource } from '../../../shared/ports/secret-source.ts';
import { makeTestApp, type TestApp } from './harness.ts';

const HYPERVISORS_ON = {
  PROXMOX_ENABLED: 'true',
  PROXMOX_HOST: 'pve.lab',
  PROXMOX_PASSWORD_SECRET: 'pve-root',
  HYPERV_ENABLED: 'true',
  HYPERV_HOST: 'hv.lab',
  HYPERV_PASSWORD_SECRET: 'hv-admin',
};

const runBody = (targetId: string) => SubmitRunBody.parse({ kind: 'vm', targetId, asset: 'hello/site.yml' });
const batchBody = (targetIds: string[]) =>
  SubmitBatchBody.parse({ kind: 'vm', targetIds, asset: 'hello/site.yml' });

class MapSecrets implements SecretSource {
  constructor(private readonly values: Record<string, string>) {}
  async get(name: string): Promise<string> {
    const value = this.values[name];
    if (value === undefined) throw new NotFoundError(`no secret ${name}`);
    return value;
  }
}

describe('runs on a hypervisor group', () => {
  let app: TestApp;
  afterEach(() => app.close());

  it('queues a run on the proxmox group for the local runner', async () => {
    app = makeTestApp({ env: HYPERVISORS_ON });

    const { run } = await submitRun(app.deps, runBody('proxmox'), 'alice');

    expect(run).toMatchObject({ state: 'queued', runner: 'local', targetId: 'proxmox' });
  });

  it('refuses it on any runner but local, with the on-prem rule', async () => {
    app = makeTestApp({ env: { ...HYPERVISORS_ON, ANSIBLE_RUNNER: 'ecs' }, launcherBackend: 'ecs' });

    const { run } = await submitRun(app.deps, runBody('hyperv'), 'alice');

    expect(run.state).toBe('refused');
    expect(run.reason).toBe(
      'Only the local runner can reach on-prem hypervisor VMs, but ansible_runner resolves to ecs: set ansible_runner to local',
    );
  });

  it('refuses a group that is disabled or has no host, and writes nothing', async () => {
    app = makeTestApp({ env: { ...HYPERVISORS_ON, VSPHERE_ENABLED: 'true' } });

    const error = await submitRun(app.deps, runBody('vsphere'), 'alice').catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/^Target vsphere is not a configured hypervisor/);
    expect((await app.store.listRuns({ limit: 10 })).runs).toEqual([]);
  });

  it('records the Proxmox note as the refusal when only an API token is configured', async () => {
    app = makeTestApp({
      env: { PROXMOX_ENABLED: 'true', PROXMOX_HOST: 'pve.lab', PROXMOX_TOKEN_SECRET: 'pve-token' },
    });

    const { run } = await submitRun(app.deps, runBody('proxmox'), 'alice');

    expect(run.state).toBe('refused');
    expect(run.reason).toMatch(
      /^SSH to Proxmox needs proxmox_password \(the root@pam password\); an API token alone/,
    );
  });

  it('batches hypervisor groups, and names an unconfigured one among them', async () => {
    app = makeTestApp({ env: HYPERVISORS_ON });

    const batch = await submitBatch(app.deps, batchBody(['proxmox', 'hyperv']), 'alice');
    const refused = (await submitBatch(app.deps, batchBody(['proxmox', 'nutanix']), 'alice').catch(
      (e: unknown) => e,
    )) as SelectionRefusedError;

    expect(batch.runs.map((r) => [r.targetId, r.runner])).toEqual([
      ['proxmox', 'local'],
      ['hyperv', 'local'],
    ]);
    expect(refused.targets).toEqual([
      {
        targetId: 'nutanix',
        reason: expect.stringMatching(/^Target nutanix is not a configured hypervisor/),
      },
    ]);
  });

  it('gives the task the group host and the password as ansible_password from the secret store', async () => {
    app = makeTestApp({ env: HYPERVISORS_ON });
    const { run: pve } = await submitRun(app.deps, runBody('proxmox'), 'alice');
    const { run: hv } = await submitRun(app.deps, runBody('hyperv'), 'alice');
    const secrets = new MapSecrets({ 'pve-root': 'pve-canary', 'hv-admin': 'hv-canary' });
    const deps = { ...app.deps, secrets };

    const pveTask = await prepareTask(deps, pve);
    const hvTask = await prepareTask(deps, hv);

    expect(pveTask.spec.inventory.all.hosts).toEqual({
      proxmox: { ansible_host: 'pve.lab', ansible_connection: 'ssh', ansible_port: 22, ansible_user: 'root' },
    });
    expect(pveTask.spec.secretVars).toEqual([{ var: 'ansible_password', env: 'RW_HYPERVISOR_PASSWORD' }]);
    expect(pveTask.secretEnv).toEqual({ RW_HYPERVISOR_PASSWORD: 'pve-canary' });
    expect(hvTask.spec.inventory.all.hosts.hyperv).toMatchObject({
      ansible_connection: 'winrm',
      ansible_user: 'Administrator',
    });
    expect(JSON.stringify([pveTask.spec, hvTask.spec])).not.toMatch(/canary/);
  });

  it('rejects the launch, naming the setting, when the password secret does not exist', async () => {
    app = makeTestApp({ env: HYPERVISORS_ON });
    const { run } = await submitRun(app.deps, runBody('proxmox'), 'alice');

    const error = await prepareTask({ ...app.deps, secrets: new MapSecrets({}) }, run).catch(
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect((error as Error).message).toBe(
      'Secret pve-root (proxmox_password_secret) could not be resolved: store the proxmox login password under that name',
    );
  });
});
