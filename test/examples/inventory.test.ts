import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Api,
  client,
  LOCALHOST_TARGET,
  type LocalProcess,
  newDataDir,
  REPO,
  startLocal,
} from '../e2e/harness.ts';

/**
 * examples/inventory/remote_worker.py as a user runs it: Debian's real
 * `ansible-inventory` and `ansible-playbook --list-hosts` with the script as
 * the inventory source, against local mode started as its own process, with
 * the URL and token from the environment.
 */

const execFileAsync = promisify(execFile);
const SCRIPT = join(REPO, 'examples/inventory/remote_worker.py');
const SITE = join(REPO, 'examples/playbooks/hello/site.yml');

describe('examples/inventory/remote_worker.py against local mode', () => {
  let local: LocalProcess;
  let api: Api;
  let work: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'rw-inventory-'));
    local = await startLocal(newDataDir(), {
      // Two hypervisor integrations configured, one enabled without a host, one disabled with one.
      PROXMOX_ENABLED: 'true',
      PROXMOX_HOST: 'pve.lab.example',
      PROXMOX_PASSWORD_SECRET: 'pve-root-password',
      HYPERV_ENABLED: 'true',
      HYPERV_HOST: 'hv01.lab.example',
      VSPHERE_ENABLED: 'true',
      XCPNG_HOST: 'xcp.lab.example',
    });
    api = client(local.url, local.token);
    for (const [id, body] of Object.entries({
      localhost: LOCALHOST_TARGET,
      'web-01': { kind: 'vm', cloud: 'aws', name: 'web 01', address: '10.0.0.5', sshUser: 'ec2-user' },
      'win-01': { kind: 'vm', cloud: 'azure', name: 'win 01', address: '10.1.0.7', connection: 'winrm' },
      'pve-vm-101': { kind: 'vm', cloud: 'local', name: 'vm 101', node: 'pve1', vmid: 101 },
      'orders-db': {
        kind: 'database',
        cloud: 'local',
        engine: 'postgresql',
        name: 'orders',
        endpoint: { host: 'db1.lan', port: 5432 },
        source: 'registered',
        managedAccount: 'db1.lan/postgres',
      },
    })) {
      const put = await api('PUT', `/targets/${id}`, body);
      expect(put.status, JSON.stringify(put.body)).toBe(201);
    }
    env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: work,
      ANSIBLE_LOCAL_TEMP: join(work, 'tmp'),
      ANSIBLE_NOCOLOR: '1',
      REMOTE_WORKER_URL: local.url,
      REMOTE_WORKER_TOKEN: local.token,
    };
  }, 60_000);

  afterAll(async () => {
    await local?.stop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  const ansible = (tool: string, args: readonly string[], extraEnv: Record<string, string> = {}) =>
    execFileAsync(tool, [...args], { cwd: work, env: { ...env, ...extraEnv }, maxBuffer: 8 * 1024 * 1024 });

  it('ansible-inventory --list shows registered targets and hypervisor groups with their hostvars', async () => {
    const { stdout } = await ansible('ansible-inventory', ['-i', SCRIPT, '--list']);
    const inventory = JSON.parse(stdout);
    const hostvars = inventory._meta.hostvars;

    expect(Object.keys(hostvars).sort()).toEqual(
      ['hv01.lab.example', 'localhost', 'orders-db', 'pve.lab.example', 'web-01', 'win-01'].sort(),
    );
    expect(hostvars['web-01']).toMatchObject({ ansible_host: '10.0.0.5', ansible_user: 'ec2-user' });
    expect(hostvars['win-01']).toMatchObject({ ansible_connection: 'winrm', ansible_port: 5986 });
    expect(inventory.cloud_aws.hosts).toEqual(['web-01']);
    expect(inventory.kind_database.hosts).toEqual(['orders-db']);
    expect(inventory.proxmox.hosts).toEqual(['pve.lab.example']);
    expect(hostvars['pve.lab.example']).toMatchObject({ ansible_connection: 'ssh', ansible_user: 'root' });
    expect(inventory.hyperv.hosts).toEqual(['hv01.lab.example']);
    expect(hostvars['hv01.lab.example']).toMatchObject({ ansible_connection: 'winrm' });
    // vSphere is enabled without a host, XCP-ng has a host but is disabled: both silently omitted.
    expect(inventory.vsphere).toBeUndefined();
    expect(inventory.xcpng).toBeUndefined();
    expect(stdout).not.toContain('pve-root-password');
  });

  it('ansible-playbook --list-hosts resolves groups and limits through the script', async () => {
    const all = await ansible('ansible-playbook', ['-i', SCRIPT, SITE, '--list-hosts']);
    const proxmox = await ansible('ansible-playbook', [
      '-i',
      SCRIPT,
      SITE,
      '--list-hosts',
      '--limit',
      'proxmox',
    ]);
    const vms = await ansible('ansible-playbook', ['-i', SCRIPT, SITE, '--list-hosts', '--limit', 'kind_vm']);

    expect(all.stdout).toMatch(/hosts \(6\):/);
    expect(proxmox.stdout).toMatch(/hosts \(1\):\s+pve\.lab\.example/);
    expect(vms.stdout).toMatch(/hosts \(3\):/);
    for (const host of ['localhost', 'web-01', 'win-01']) expect(vms.stdout).toContain(host);
  });

  it('runs a play through the script inventory against the registered localhost', async () => {
    const { stdout } = await ansible('ansible-playbook', ['-i', SCRIPT, SITE, '--limit', 'localhost']);

    expect(stdout).toContain('hello from localhost');
    expect(stdout).toMatch(/localhost\s+: ok=1 .*failed=0/);
  });

  it('fails with the API problem when the token is wrong, and says to set it when missing', async () => {
    const wrong = await ansible('ansible-inventory', ['-i', SCRIPT, '--list'], {
      REMOTE_WORKER_TOKEN: 'rw_wrong_token',
      ANSIBLE_INVENTORY_UNPARSED_FAILED: '1',
    }).catch((error: { code: number; stderr: string }) => error);
    // ansible-inventory runs the script through its shebang; python3 here to read its own stderr.
    const missing = await execFileAsync('python3', [SCRIPT, '--list'], {
      env: { PATH: env.PATH ?? '' },
    }).catch((error: { code: number; stderr: string }) => error);

    expect((wrong as { code: number }).code).not.toBe(0);
    expect((wrong as { stderr: string }).stderr).toContain('answered 401');
    expect((wrong as { stderr: string }).stderr).not.toContain('rw_wrong_token');
    expect((missing as { code: number }).code).toBe(1);
    expect((missing as { stderr: string }).stderr).toContain('set REMOTE_WORKER_TOKEN');
  });

  it('refuses a registry row named like a hypervisor group, and a run on a group that is not configured', async () => {
    const put = await api('PUT', '/targets/proxmox', LOCALHOST_TARGET);
    const run = await api('POST', '/runs', { kind: 'vm', targetId: 'vsphere', asset: 'hello/site.yml' });

    expect(put.status).toBe(400);
    expect(put.body.detail).toBe(
      'proxmox is the name of the Proxmox hypervisor group: register the target under another id',
    );
    expect(run.status).toBe(400);
    expect(run.body.detail).toBe(
      'Target vsphere is not a configured hypervisor: the hypervisor integration is either disabled or has no host set. Enable it and fill in the host (vsphere_enabled: true and vsphere_host)',
    );
  });

  it('shows why the REST example no longer says to save the answer: a saved file is not an inventory', async () => {
    const saved = join(work, 'inventory.json');
    writeFileSync(saved, JSON.stringify((await api('GET', '/inventory')).body));

    const { stdout } = await ansible('ansible-inventory', ['-i', saved, '--list']);

    expect(Object.keys(JSON.parse(stdout)._meta?.hostvars ?? {})).toEqual([]);
  });
});
