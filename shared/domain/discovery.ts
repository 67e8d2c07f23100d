import { vmHostVars } from './inventory.ts';
import type { InventoryGroups } from './inventory-groups.ts';
import { type HostingCloud, UNTARGETABLE_LABEL, type VmTarget } from './target.ts';

/**
 * Cloud VMs found by asking each cloud (EC2 DescribeInstances, Azure Compute
 * virtual machines, GCE instances), as the seeds offer them: a cached list,
 * one inventory group per cloud (`discovered_aws`, `discovered_azure`,
 * `discovered_gcp`), each row targetable like a registered VM — same runner
 * rules, same per-cloud SSH-key rules — or kept with the reason it is not.
 */

/** One VM as a cloud reported it, before the targeting rules. */
export interface DiscoveredVm {
  /** `<cloud>-<the cloud's own id>`: `aws-i-0abc…`, `azure-<resource group>-<name>`, `gcp-<zone>-<name>`. */
  readonly id: string;
  readonly cloud: HostingCloud;
  readonly name: string;
  /** The cloud's id for it (instance id, ARM resource id, instance self link id). */
  readonly cloudId: string;
  /** Region or zone. */
  readonly location?: string;
  /** As the cloud says it, lower-case: `running`, `stopped`, `deallocated`, `terminated` … */
  readonly state: string;
  readonly privateAddress?: string;
  readonly publicAddress?: string;
  readonly os: 'linux' | 'windows';
  readonly labels?: Readonly<Record<string, string>>;
}

/** A discovered VM with the targeting rules applied. */
export interface DiscoveredRow extends DiscoveredVm {
  /** Why it cannot be a target now; absent when it can. */
  readonly untargetableReason?: string;
}

/** States each cloud calls up and reachable. */
const RUNNING = new Set(['running', 'vm running']);

/** The characters a target id allows; anything else in a cloud's name becomes `-`. */
export const discoveredId = (cloud: HostingCloud, ...parts: readonly string[]): string =>
  `${cloud}-${parts.join('-')}`.replace(/[^A-Za-z0-9._:-]/g, '-').slice(0, 128);

export function discoveredRow(vm: DiscoveredVm): DiscoveredRow {
  const reason = !RUNNING.has(vm.state)
    ? `The VM is ${vm.state}, not running: start it in ${vm.cloud} and refresh discovery to target it`
    : vm.privateAddress === undefined && vm.publicAddress === undefined
      ? 'The VM has no IP address to connect to'
      : undefined;
  return reason === undefined ? vm : { ...vm, untargetableReason: reason };
}

/**
 * The discovered VM as the target a run acts on. The address is the private
 * one when there is one (runners in the cloud reach it in-subnet), else the
 * public one; Windows VMs are reached over WinRM.
 */
export function discoveredTarget(row: DiscoveredRow, discoveredAt: string): VmTarget {
  const address = row.privateAddress ?? row.publicAddress;
  return {
    id: row.id,
    kind: 'vm',
    cloud: row.cloud,
    name: row.name,
    ...(row.untargetableReason === undefined && address !== undefined ? { address } : {}),
    connection: row.os === 'windows' ? 'winrm' : 'ssh',
    os: row.os,
    labels: {
      'remote-worker/discovered': row.cloud,
      ...(row.untargetableReason === undefined ? {} : { [UNTARGETABLE_LABEL]: row.untargetableReason }),
    },
    createdAt: discoveredAt,
    updatedAt: discoveredAt,
  };
}

/** Discovered, targetable VMs as one inventory group per cloud; untargetable rows are left out. */
export function discoveredInventory(rows: readonly DiscoveredRow[], discoveredAt: string): InventoryGroups {
  const hostvars: Record<string, Record<string, unknown>> = {};
  const groups: Record<string, string[]> = {};
  for (const row of [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    if (row.untargetableReason !== undefined) continue;
    const target = discoveredTarget(row, discoveredAt);
    hostvars[row.id] = {
      ...vmHostVars(target, undefined),
      rw_kind: 'vm',
      rw_cloud: row.cloud,
      rw_name: row.name,
      rw_os: row.os,
      rw_discovered: true,
      ...(row.location === undefined ? {} : { rw_location: row.location }),
      ...(row.publicAddress === undefined ? {} : { rw_public_address: row.publicAddress }),
    };
    const group = `discovered_${row.cloud}`;
    groups[group] = [...(groups[group] ?? []), row.id];
  }
  return { hostvars, groups };
}
