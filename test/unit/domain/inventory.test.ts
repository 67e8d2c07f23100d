import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/domain/errors.ts';
import { inventoryForRun, registryInventory } from '../../../shared/domain/inventory.ts';
import { RUN_KINDS } from '../../../shared/domain/run.ts';
import type { Target } from '../../../shared/domain/target.ts';

const stamps = { createdAt: '2025-01-01T00:00:00.000Z', updatedAt: '2025-01-01T00:00:00.000Z' };

const linuxVm: Target = {
  ...stamps,
  id: 'web-1',
  kind: 'vm',
  name: 'web 1',
  cloud: 'aws',
  address: '10.0.0.5',
  connection: 'ssh',
  sshUser: 'ec2-user',
  os: 'linux',
};
const windowsVm: Target = {
  ...stamps,
  id: 'win-1',
  kind: 'vm',
  name: 'win 1',
  cloud: 'local',
  address: 'win1.lan',
  connection: 'winrm',
  hypervisorGroup: 'hyper-v east',
};
const cluster: Target = {
  ...stamps,
  id: 'k3s-lab',
  kind: 'cluster',
  name: 'lab',
  cloud: 'local',
  provider: 'k3s',
};
const database: Target = {
  ...stamps,
  id: 'pg-main',
  kind: 'database',
  name: 'pg',
  cloud: 'aws',
  engine: 'postgresql',
  endpoint: { host: 'pg.internal', port: 5432 },
  source: 'provisioned',
};
const desktop: Target = { ...stamps, id: 'vd-1', kind: 'virtual_desktop', name: 'seat', cloud: 'azure' };
const proxmoxOnly: Target = {
  ...stamps,
  id: 'pve-101',
  kind: 'vm',
  name: 'vm 101',
  cloud: 'local',
  connection: 'ssh',
  node: 'pve1',
  vmid: 101,
  hypervisorGroup: 'proxmox',
};
const ociDb: Target = { ...database, id: 'oci-db', cloud: 'oci' };

describe('inventoryForRun', () => {
  it('names the one host by target id and connects over SSH with the target user', () => {
    const inv = inventoryForRun('vm', linuxVm);

    expect(inv).toEqual({
      all: {
        hosts: {
          'web-1': {
            ansible_host: '10.0.0.5',
            ansible_connection: 'ssh',
            ansible_port: 22,
            ansible_user: 'ec2-user',
          },
        },
      },
    });
  });

  it("prefers the run's SSH user to the target's", () => {
    const inv = inventoryForRun('vm', linuxVm, { sshUser: 'deploy' });

    expect(inv.all.hosts['web-1']?.ansible_user).toBe('deploy');
  });

  it('uses WinRM over HTTPS with NTLM on port 5986 for a winrm target', () => {
    const inv = inventoryForRun('vm', windowsVm);

    expect(inv.all.hosts['win-1']).toEqual({
      ansible_host: 'win1.lan',
      ansible_connection: 'winrm',
      ansible_port: 5986,
      ansible_winrm_transport: 'ntlm',
    });
  });

  it('keeps a registry port', () => {
    const inv = inventoryForRun('vm', { ...windowsVm, port: 5985 });

    expect(inv.all.hosts['win-1']?.ansible_port).toBe(5985);
  });

  it('runs a local-connection VM on the runner with the playbook interpreter', () => {
    const inv = inventoryForRun('vm', { ...linuxVm, connection: 'local' });

    expect(inv.all.hosts['web-1']).toMatchObject({
      ansible_connection: 'local',
      ansible_python_interpreter: '{{ ansible_playbook_python }}',
    });
    expect(inv.all.hosts['web-1']).not.toHaveProperty('ansible_port');
  });

  it.each(RUN_KINDS.filter((k) => k !== 'vm'))(
    'makes %s a localhost play with a local connection',
    (kind) => {
      const inv = inventoryForRun(kind, kind === 'database_play' ? database : cluster);

      expect(inv).toEqual({
        all: {
          hosts: {
            localhost: {
              ansible_connection: 'local',
              ansible_python_interpreter: '{{ ansible_playbook_python }}',
            },
          },
        },
      });
    },
  );

  it('refuses a VM run without a target, with a non-VM target, or with an untargetable VM', () => {
    expect(() => inventoryForRun('vm', undefined)).toThrow(ValidationError);
    expect(() => inventoryForRun('vm', cluster)).toThrow(/needs a VM target/);
    expect(() => inventoryForRun('vm', proxmoxOnly)).toThrow(/node \+ VMID/);
  });
});

describe('registryInventory', () => {
  const inv = registryInventory([windowsVm, linuxVm, cluster, database, desktop, proxmoxOnly, ociDb]);

  it('lists targetable rows with their connection variables', () => {
    expect(Object.keys(inv._meta.hostvars).sort()).toEqual(['k3s-lab', 'pg-main', 'web-1', 'win-1']);
    expect(inv._meta.hostvars['web-1']).toMatchObject({
      ansible_host: '10.0.0.5',
      ansible_user: 'ec2-user',
      rw_kind: 'vm',
      rw_cloud: 'aws',
      rw_os: 'linux',
    });
    expect(inv._meta.hostvars['pg-main']).toMatchObject({
      ansible_connection: 'local',
      rw_engine: 'postgresql',
      rw_db_host: 'pg.internal',
      rw_db_port: 5432,
    });
  });

  it('leaves out virtual desktops, node+VMID-only VMs and unrunnable databases', () => {
    const everyHost = Object.entries(inv)
      .filter(([name]) => name !== '_meta')
      .flatMap(([, group]) => ('hosts' in group ? (group.hosts ?? []) : []));

    expect(everyHost).not.toContain('vd-1');
    expect(everyHost).not.toContain('pve-101');
    expect(everyHost).not.toContain('oci-db');
    expect(inv).not.toHaveProperty('hypervisor_proxmox');
  });

  it('groups hosts per cloud, per kind and per hypervisor group with safe group names', () => {
    expect(inv.cloud_aws).toEqual({ hosts: ['pg-main', 'web-1'] });
    expect(inv.cloud_local).toEqual({ hosts: ['k3s-lab', 'win-1'] });
    expect(inv.kind_vm).toEqual({ hosts: ['web-1', 'win-1'] });
    expect(inv.kind_cluster).toEqual({ hosts: ['k3s-lab'] });
    expect(inv.kind_database).toEqual({ hosts: ['pg-main'] });
    expect(inv.hypervisor_hyper_v_east).toEqual({ hosts: ['win-1'] });
    expect(inv.all).toEqual({
      children: [
        'cloud_aws',
        'cloud_local',
        'hypervisor_hyper_v_east',
        'kind_cluster',
        'kind_database',
        'kind_vm',
      ],
    });
  });

  it('is an empty inventory for an empty registry', () => {
    expect(registryInventory([])).toEqual({ _meta: { hostvars: {} }, all: { children: [] } });
  });
});
