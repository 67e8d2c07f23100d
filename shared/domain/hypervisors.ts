import { vmHostVars } from './inventory.ts';
import type { InventoryGroups } from './inventory-groups.ts';
import type { VmTarget } from './target.ts';

/**
 * On-premises hypervisor integrations, as the seeds build the inventory from
 * them: every integration that is both enabled and has a host configured is
 * an inventory group named after the hypervisor (`proxmox`, `vsphere`,
 * `hyperv`, `xcpng`, `nutanix`) holding its host; the rest are silently
 * omitted. A run or batch targets such a group by that name (`targetId:
 * "proxmox"`); the group's host is reached over SSH — WinRM for Hyper-V —
 * and only by the local runner, as for every on-prem VM (cloud `local`).
 * Passwords are named secrets, resolved when the run starts, never put in
 * an inventory.
 */
export const HYPERVISORS = ['proxmox', 'vsphere', 'hyperv', 'xcpng', 'nutanix'] as const;
export type Hypervisor = (typeof HYPERVISORS)[number];

export const isHypervisor = (name: string): name is Hypervisor =>
  (HYPERVISORS as readonly string[]).includes(name);

interface HypervisorProfile {
  /** How the seeds and operators name it. */
  readonly label: string;
  readonly connection: 'ssh' | 'winrm';
  /** The account a fresh install logs in with: Proxmox's root@pam, ESXi's and XCP-ng's root. */
  readonly defaultUser: string;
}

export const HYPERVISOR_PROFILES: Readonly<Record<Hypervisor, HypervisorProfile>> = {
  proxmox: { label: 'Proxmox', connection: 'ssh', defaultUser: 'root' },
  vsphere: { label: 'vSphere/ESXi', connection: 'ssh', defaultUser: 'root' },
  hyperv: { label: 'Hyper-V', connection: 'winrm', defaultUser: 'Administrator' },
  xcpng: { label: 'XCP-ng', connection: 'ssh', defaultUser: 'root' },
  nutanix: { label: 'Nutanix', connection: 'ssh', defaultUser: 'nutanix' },
};

/** The settings this module reads; structural, so the domain does not depend on shared/config. */
export type HypervisorSettings = {
  readonly [H in Hypervisor as `${H}_enabled`]?: boolean | undefined;
} & {
  readonly [H in Hypervisor as `${H}_host` | `${H}_user` | `${H}_password_secret`]?: string | undefined;
} & { readonly proxmox_token_secret?: string | undefined };

export interface ConfiguredHypervisor {
  readonly name: Hypervisor;
  readonly host: string;
  readonly user: string;
  readonly connection: 'ssh' | 'winrm';
  /** Name of the secret holding the login password; undefined when none is configured. */
  readonly passwordSecret?: string;
}

const isSet = (value: string | undefined): value is string => value !== undefined && value.trim() !== '';

/** The integration when it is both enabled and has a host; undefined otherwise (omitted, not an error). */
export function configuredHypervisor(
  settings: HypervisorSettings,
  name: Hypervisor,
): ConfiguredHypervisor | undefined {
  const host = settings[`${name}_host`];
  if (settings[`${name}_enabled`] !== true || !isSet(host)) return undefined;
  const profile = HYPERVISOR_PROFILES[name];
  const secret = settings[`${name}_password_secret`];
  return {
    name,
    host: host.trim(),
    user: settings[`${name}_user`] ?? profile.defaultUser,
    connection: profile.connection,
    ...(isSet(secret) ? { passwordSecret: secret } : {}),
  };
}

export function configuredHypervisors(settings: HypervisorSettings): ConfiguredHypervisor[] {
  return HYPERVISORS.flatMap((name) => {
    const configured = configuredHypervisor(settings, name);
    return configured === undefined ? [] : [configured];
  });
}

/** The seeds' troubleshooting message for a group that is not configured, with its fix. */
export function notConfiguredReason(name: string): string {
  const keys = isHypervisor(name) ? ` (${name}_enabled: true and ${name}_host)` : '';
  const known = isHypervisor(name) ? '' : ` (hypervisor groups: ${HYPERVISORS.join(', ')})`;
  return `Target ${name} is not a configured hypervisor${known}: the hypervisor integration is either disabled or has no host set. Enable it and fill in the host${keys}`;
}

/**
 * The Proxmox SSH note as a refusal: the local runner logs in to Proxmox
 * over SSH with proxmox_password (the root@pam password); an API token alone
 * cannot open an SSH session. Undefined for every other hypervisor, and for
 * Proxmox with a password secret.
 */
export function hypervisorRunProblem(
  settings: HypervisorSettings,
  configured: ConfiguredHypervisor,
): string | undefined {
  if (configured.name !== 'proxmox' || configured.passwordSecret !== undefined) return undefined;
  const tokenOnly = isSet(settings.proxmox_token_secret);
  return (
    `SSH to Proxmox needs proxmox_password (the root@pam password)` +
    (tokenOnly ? '; an API token alone (proxmox_token_secret) fails for SSH' : '') +
    `. Either set proxmox_password_secret to the secret holding that password${tokenOnly ? ' in addition to the token' : ''}, ` +
    'or target Proxmox VMs individually by IP rather than using the proxmox group'
  );
}

/** Timestamps of a target that lives in the settings, not the registry. */
const FROM_SETTINGS = '1970-01-01T00:00:00.000Z';

/**
 * The configured hypervisor as the VM target a run acts on: its id is the
 * group name, it is on-prem (cloud `local`, so only the local runner
 * resolves), and its one host is the hypervisor's.
 */
export function hypervisorTarget(configured: ConfiguredHypervisor): VmTarget {
  const profile = HYPERVISOR_PROFILES[configured.name];
  return {
    id: configured.name,
    kind: 'vm',
    cloud: 'local',
    name: `${profile.label} ${configured.host}`,
    address: configured.host,
    connection: configured.connection,
    ...(configured.connection === 'winrm' ? { os: 'windows' as const } : {}),
    hypervisorGroup: configured.name,
    sshUser: configured.user,
    labels: { 'remote-worker/hypervisor': configured.name },
    createdAt: FROM_SETTINGS,
    updatedAt: FROM_SETTINGS,
  };
}

/** The hypervisor a target stands for, when it is one made by {@link hypervisorTarget}. */
export function hypervisorOf(target: { readonly id: string; readonly kind: string }): Hypervisor | undefined {
  return target.kind === 'vm' && isHypervisor(target.id) ? target.id : undefined;
}

/** A registry id that would shadow a hypervisor group; PUT /targets refuses it. */
export function reservedTargetIdProblem(id: string): string | undefined {
  return isHypervisor(id)
    ? `${id} is the name of the ${HYPERVISOR_PROFILES[id].label} hypervisor group: register the target under another id`
    : undefined;
}

/**
 * The configured hypervisors as inventory groups: one group per hypervisor,
 * named after it, holding its host (named by its address) with its
 * connection variables — `ansible_connection=winrm` for Hyper-V — and
 * `rw_*` descriptions. No password: a run gets it from the secret store.
 */
export function hypervisorInventory(settings: HypervisorSettings): InventoryGroups {
  const hostvars: Record<string, Record<string, unknown>> = {};
  const groups: Record<string, string[]> = {};
  for (const configured of configuredHypervisors(settings)) {
    const target = hypervisorTarget(configured);
    hostvars[configured.host] = {
      ...vmHostVars(target, configured.user),
      rw_kind: 'hypervisor',
      rw_cloud: 'local',
      rw_hypervisor: configured.name,
      rw_name: target.name,
      ...(target.os === undefined ? {} : { rw_os: target.os }),
    };
    groups[configured.name] = [configured.host];
  }
  return { hostvars, groups };
}
