import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../../shared/config/settings.ts';
import {
  configuredHypervisors,
  HYPERVISORS,
  hypervisorInventory,
  hypervisorRunProblem,
  hypervisorTarget,
  notConfiguredReason,
  reservedTargetIdProblem,
} from '../../../shared/domain/hypervisors.ts';
import { registryInventory } from '../../../shared/domain/inventory.ts';
import { mergeInventory } from '../../../shared/domain/inventory-groups.ts';
import { selectionProblem } from '../../../shared/domain/selection.ts';

const settings = (env: Record<string, string>) => loadSettings({ env });

describe('configuredHypervisors', () => {
  it('keeps only integrations that are both enabled and have a host, in a fixed order', () => {
    const s = settings({
      NUTANIX_ENABLED: 'true',
      NUTANIX_HOST: 'prism.lab',
      PROXMOX_ENABLED: 'true',
      PROXMOX_HOST: 'pve.lab',
      VSPHERE_ENABLED: 'true',
      XCPNG_HOST: 'xcp.lab',
      HYPERV_ENABLED: 'false',
      HYPERV_HOST: 'hv.lab',
    });

    expect(configuredHypervisors(s).map((h) => [h.name, h.host, h.user])).toEqual([
      ['proxmox', 'pve.lab', 'root'],
      ['nutanix', 'prism.lab', 'nutanix'],
    ]);
  });

  it('has nothing configured by default and accepts every hypervisor key', () => {
    expect(configuredHypervisors(settings({}))).toEqual([]);
    for (const h of HYPERVISORS) {
      expect(
        configuredHypervisors(
          settings({
            [`${h.toUpperCase()}_ENABLED`]: 'yes',
            [`${h.toUpperCase()}_HOST`]: '192.0.2.10',
            [`${h.toUpperCase()}_USER`]: 'ops',
            [`${h.toUpperCase()}_PASSWORD_SECRET`]: `${h}-password`,
          }),
        ),
      ).toEqual([
        {
          name: h,
          host: '192.0.2.10',
          user: 'ops',
          connection: h === 'hyperv' ? 'winrm' : 'ssh',
          passwordSecret: `${h}-password`,
        },
      ]);
    }
  });

  it('rejects a host with a scheme, naming the key', () => {
    expect(() => settings({ PROXMOX_HOST: 'https://pve.lab:8006/' })).toThrow(/proxmox_host/);
  });
});

describe('hypervisorInventory', () => {
  it('makes one group per configured hypervisor holding its host; Hyper-V gets winrm; no password', () => {
    const s = settings({
      PROXMOX_ENABLED: 'true',
      PROXMOX_HOST: 'pve.lab',
      PROXMOX_PASSWORD_SECRET: 'pve-root',
      HYPERV_ENABLED: 'true',
      HYPERV_HOST: 'hv.lab',
    });

    const groups = hypervisorInventory(s);

    expect(groups.groups).toEqual({ proxmox: ['pve.lab'], hyperv: ['hv.lab'] });
    expect(groups.hostvars['pve.lab']).toMatchObject({
      ansible_host: 'pve.lab',
      ansible_connection: 'ssh',
      ansible_port: 22,
      ansible_user: 'root',
      rw_hypervisor: 'proxmox',
    });
    expect(groups.hostvars['hv.lab']).toMatchObject({
      ansible_connection: 'winrm',
      ansible_port: 5986,
      ansible_winrm_transport: 'ntlm',
      ansible_user: 'Administrator',
      rw_os: 'windows',
    });
    expect(JSON.stringify(groups)).not.toContain('pve-root');
  });

  it('merges into the registry inventory with all.children sorted and registry hosts kept', () => {
    const merged = mergeInventory(registryInventory([]), {
      hostvars: { a: { x: 1 } },
      groups: { zeta: ['a'], alpha: ['a'] },
    });

    expect(merged.all.children).toEqual(['alpha', 'zeta']);
    expect(merged.zeta).toEqual({ hosts: ['a'] });
  });
});

describe('hypervisor refusals', () => {
  it('says a group that is not configured is not a configured hypervisor, with the fix', () => {
    expect(selectionProblem('vm', undefined, 'vsphere')).toBe(
      'Target vsphere is not a configured hypervisor: the hypervisor integration is either disabled or has no host set. Enable it and fill in the host (vsphere_enabled: true and vsphere_host)',
    );
    expect(notConfiguredReason('esx')).toMatch(
      /^Target esx is not a configured hypervisor \(hypervisor groups: /,
    );
    expect(selectionProblem('vm', undefined, 'web-01')).toBe('No target with id web-01 is registered');
  });

  it('refuses Proxmox with an API token and no password: SSH needs proxmox_password', () => {
    const tokenOnly = settings({
      PROXMOX_ENABLED: 'true',
      PROXMOX_HOST: 'pve',
      PROXMOX_TOKEN_SECRET: 'pve-token',
    });
    const [proxmox] = configuredHypervisors(tokenOnly);
    if (proxmox === undefined) throw new Error('proxmox is configured');

    expect(hypervisorRunProblem(tokenOnly, proxmox)).toBe(
      'SSH to Proxmox needs proxmox_password (the root@pam password); an API token alone (proxmox_token_secret) fails for SSH. ' +
        'Either set proxmox_password_secret to the secret holding that password in addition to the token, ' +
        'or target Proxmox VMs individually by IP rather than using the proxmox group',
    );
    const withPassword = { ...tokenOnly, proxmox_password_secret: 'pve-root' };
    expect(hypervisorRunProblem(withPassword, { ...proxmox, passwordSecret: 'pve-root' })).toBeUndefined();
  });

  it('lets other hypervisors use the runner’s own SSH keys when no password is set', () => {
    const s = settings({ XCPNG_ENABLED: 'true', XCPNG_HOST: 'xcp' });
    const [xcp] = configuredHypervisors(s);
    if (xcp === undefined) throw new Error('xcpng is configured');

    expect(hypervisorRunProblem(s, xcp)).toBeUndefined();
    expect(hypervisorTarget(xcp)).toMatchObject({
      id: 'xcpng',
      cloud: 'local',
      address: 'xcp',
      sshUser: 'root',
    });
  });

  it('reserves the group names in the registry', () => {
    expect(reservedTargetIdProblem('hyperv')).toBe(
      'hyperv is the name of the Hyper-V hypervisor group: register the target under another id',
    );
    expect(reservedTargetIdProblem('hyperv-01')).toBeUndefined();
  });
});
