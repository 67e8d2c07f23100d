import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  DescribeImagesCommand,
  EC2Client,
  RunInstancesCommand,
  StopInstancesCommand,
} from '@aws-sdk/client-ec2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useMoto } from '../support/moto.ts';
import {
  type Api,
  client,
  LOCALHOST_TARGET,
  type LocalProcess,
  newDataDir,
  REPO,
  startLocal,
  waitForState,
} from './harness.ts';

/**
 * Cloud VM discovery end to end: EC2 DescribeInstances against moto, local
 * mode started as its own process with discovery_clouds=aws, the cached
 * list, the discovered group in the inventory the real ansible-inventory and
 * ansible-playbook read through examples/inventory/remote_worker.py (beside
 * registered targets and a hypervisor group), and runs on discovered VMs.
 *
 * moto differs from EC2 here: instances start `running` at once and stop at
 * once (EC2 passes through pending/stopping); the private addresses it hands
 * out are not reachable, so no play connects to them.
 */
const execFileAsync = promisify(execFile);
const SCRIPT = join(REPO, 'examples/inventory/remote_worker.py');
const SITE = join(REPO, 'examples/playbooks/hello/site.yml');

describe('cloud VM discovery (EC2 on moto) in local mode', () => {
  const moto = useMoto();
  let local: LocalProcess;
  let api: Api;
  let work: string;
  const ids: Record<'web' | 'win' | 'stopped', string> = { web: '', win: '', stopped: '' };

  beforeAll(async () => {
    const ec2 = new EC2Client(moto().clientConfig());
    const images = (await ec2.send(new DescribeImagesCommand({}))).Images ?? [];
    const linux = images.find((i) => i.Platform === undefined && i.ImageId !== undefined)?.ImageId;
    const windows = images.find((i) => i.Platform?.toLowerCase() === 'windows')?.ImageId;
    if (linux === undefined || windows === undefined) throw new Error('moto offers no linux or windows AMI');
    const launch = async (image: string, name: string) => {
      const out = await ec2.send(
        new RunInstancesCommand({
          ImageId: image,
          MinCount: 1,
          MaxCount: 1,
          InstanceType: 't3.micro',
          TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'Name', Value: name }] }],
        }),
      );
      return out.Instances?.[0]?.InstanceId ?? '';
    };
    ids.web = await launch(linux, 'web-prod-1');
    ids.win = await launch(windows, 'win-prod-1');
    ids.stopped = await launch(linux, 'batch-idle');
    await ec2.send(new StopInstancesCommand({ InstanceIds: [ids.stopped] }));

    work = mkdtempSync(join(tmpdir(), 'rw-discovery-'));
    local = await startLocal(newDataDir(), {
      ...moto().env(),
      DISCOVERY_CLOUDS: 'aws',
      DISCOVERY_REFRESH_SECONDS: '0',
      PROXMOX_ENABLED: 'true',
      PROXMOX_HOST: 'pve.lab.example',
      PROXMOX_PASSWORD_SECRET: 'pve-root',
    });
    api = client(local.url, local.token);
    expect((await api('PUT', '/targets/localhost', LOCALHOST_TARGET)).status).toBe(201);
  }, 90_000);

  afterAll(async () => {
    await local?.stop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it('lists every instance on refresh; a stopped one keeps why it cannot be targeted', async () => {
    const { status, body } = await api('POST', '/discovery/refresh');
    const listed = await api('GET', '/discovery');

    expect(status).toBe(200);
    expect(body.clouds.aws).toMatchObject({ count: 3 });
    expect(body.clouds.aws.error).toBeUndefined();
    const byName = Object.fromEntries(body.vms.map((vm: any) => [vm.name, vm]));
    expect(byName['web-prod-1']).toMatchObject({
      id: `aws-${ids.web}`,
      cloud: 'aws',
      state: 'running',
      os: 'linux',
    });
    expect(byName['web-prod-1'].untargetableReason).toBeUndefined();
    expect(byName['win-prod-1']).toMatchObject({ os: 'windows' });
    expect(byName['batch-idle']).toMatchObject({
      state: 'stopped',
      untargetableReason:
        'The VM is stopped, not running: start it in aws and refresh discovery to target it',
    });
    expect(listed.body).toEqual(body);
  });

  it('is read by the real ansible-inventory and ansible-playbook beside registered and hypervisor targets', async () => {
    await api('POST', '/discovery/refresh');
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: work,
      ANSIBLE_LOCAL_TEMP: join(work, 'tmp'),
      REMOTE_WORKER_URL: local.url,
      REMOTE_WORKER_TOKEN: local.token,
    };

    const { stdout } = await execFileAsync('ansible-inventory', ['-i', SCRIPT, '--list'], { env });
    const hosts = await execFileAsync('ansible-playbook', ['-i', SCRIPT, SITE, '--list-hosts'], { env });
    const inventory = JSON.parse(stdout);

    expect(inventory.discovered_aws.hosts.sort()).toEqual([`aws-${ids.web}`, `aws-${ids.win}`].sort());
    expect(inventory._meta.hostvars[`aws-${ids.win}`]).toMatchObject({
      ansible_connection: 'winrm',
      rw_os: 'windows',
    });
    expect(inventory._meta.hostvars[`aws-${ids.web}`]).toMatchObject({
      ansible_connection: 'ssh',
      rw_discovered: true,
    });
    expect(inventory.proxmox.hosts).toEqual(['pve.lab.example']);
    expect(inventory.cloud_local.hosts).toEqual(['localhost']);
    expect(inventory._meta.hostvars[`aws-${ids.stopped}`]).toBeUndefined();
    expect(hosts.stdout).toMatch(/hosts \(4\):/);
  });

  it('targets a discovered VM like a registered one, with the AWS SSH-key rule', async () => {
    const submitted = await api('POST', '/runs', {
      kind: 'vm',
      targetId: `aws-${ids.web}`,
      asset: 'hello/site.yml',
    });
    const run = await waitForState(api, submitted.body.id, 'terminal', 30_000);

    expect(submitted.status).toBe(202);
    expect(submitted.body.runner).toBe('local');
    expect(run.state).toBe('failed');
    // ansible_ssh_key_sm_name unset: the legacy fallback (ansible_ssh_key_secret, default AWS_KEY) is asked for.
    expect(run.reason).toContain(
      `SSH key secret AWS_KEY for AWS VM aws-${ids.web} could not be read: verify ansible_ssh_key_sm_name is set and the IAM role has secretsmanager:GetSecretValue on that secret`,
    );
  });

  it('refuses the stopped VM with its reason, and batches discovered VMs', async () => {
    const stopped = await api('POST', '/runs', {
      kind: 'vm',
      targetId: `aws-${ids.stopped}`,
      asset: 'hello/site.yml',
    });
    const batch = await api('POST', '/batches', {
      kind: 'vm',
      targetIds: [`aws-${ids.web}`, `aws-${ids.win}`],
      asset: 'hello/site.yml',
    });

    expect(stopped.status).toBe(422);
    expect(stopped.body.detail).toBe(
      'The VM is stopped, not running: start it in aws and refresh discovery to target it',
    );
    expect(batch.status).toBe(202);
    expect(batch.body.runs.map((r: any) => r.targetId).sort()).toEqual(
      [`aws-${ids.web}`, `aws-${ids.win}`].sort(),
    );
  });
});
