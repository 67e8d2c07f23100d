import type { ComputeManagementClient, VirtualMachine } from '@azure/arm-compute';
import type { NetworkInterface, NetworkManagementClient, PublicIPAddress } from '@azure/arm-network';
import { type DiscoveredVm, discoveredId } from '../../domain/discovery.ts';
import type { VmDiscovery } from '../../ports/vm-discovery.ts';

export interface AzureVmDiscoveryOptions {
  readonly compute: ComputeManagementClient;
  readonly network: NetworkManagementClient;
  /** Resource groups to keep; unset, every VM of the subscription. */
  readonly resourceGroups?: readonly string[];
}

/**
 * VmDiscovery over Azure Resource Manager: `virtualMachines.listAll` twice
 * (the VMs, then `statusOnly=true` for their power state, which the full
 * listing leaves out), and the subscription's network interfaces and public
 * IP addresses once each, joined by resource id — four paged listings
 * instead of two calls per VM. Power state is the `PowerState/<state>`
 * status without its prefix (`running`, `deallocated`, `stopped` …); the
 * address is the primary NIC's primary IP configuration's private address,
 * the public one its public IP's. Windows is `osProfile.windowsConfiguration`
 * or an OS disk of type Windows.
 *
 * @example
 * const vms = await new AzureVmDiscovery({ compute, network }).discover();
 */
export class AzureVmDiscovery implements VmDiscovery {
  readonly cloud = 'azure' as const;

  constructor(private readonly options: AzureVmDiscoveryOptions) {}

  async discover(): Promise<readonly DiscoveredVm[]> {
    try {
      const [vms, statuses, nics, publicIps] = await Promise.all([
        all(this.options.compute.virtualMachines.listAll()),
        all(this.options.compute.virtualMachines.listAll({ statusOnly: 'true' })),
        all(this.options.network.networkInterfaces.listAll()),
        all(this.options.network.publicIPAddresses.listAll()),
      ]);
      const power = new Map(statuses.map((vm) => [lower(vm.id), powerState(vm)]));
      const nicById = new Map(nics.map((nic) => [lower(nic.id), nic]));
      const ipById = new Map(publicIps.map((ip) => [lower(ip.id), ip]));
      const groups = this.options.resourceGroups?.map((g) => g.toLowerCase());
      return vms.flatMap((vm) => {
        const group = resourceGroupOf(vm.id);
        if (vm.name === undefined || group === undefined) return [];
        if (groups !== undefined && !groups.includes(group.toLowerCase())) return [];
        return [toVm(vm, group, power.get(lower(vm.id)) ?? 'unknown', nicById, ipById)];
      });
    } catch (error) {
      // The discovery service records this per cloud; RestError messages name no credential.
      throw new Error(`Azure virtual machines could not be listed: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
}

async function all<T>(pages: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of pages) items.push(item);
  return items;
}

const lower = (id: string | undefined): string => (id ?? '').toLowerCase();

const resourceGroupOf = (id: string | undefined): string | undefined =>
  /\/resourceGroups\/([^/]+)\//i.exec(id ?? '')?.[1];

function powerState(vm: VirtualMachine): string {
  const code = vm.instanceView?.statuses?.find((s) => s.code?.startsWith('PowerState/'))?.code;
  return code === undefined ? 'unknown' : code.slice('PowerState/'.length).toLowerCase();
}

function toVm(
  vm: VirtualMachine,
  group: string,
  state: string,
  nicById: ReadonlyMap<string, NetworkInterface>,
  ipById: ReadonlyMap<string, PublicIPAddress>,
): DiscoveredVm {
  const name = vm.name ?? '';
  const refs = vm.networkProfile?.networkInterfaces ?? [];
  const primaryRef = refs.find((r) => r.primary === true) ?? refs[0];
  const nic = nicById.get(lower(primaryRef?.id));
  const configs = nic?.ipConfigurations ?? [];
  const config = configs.find((c) => c.primary === true) ?? configs[0];
  const privateAddress = config?.privateIPAddress;
  const publicAddress = ipById.get(lower(config?.publicIPAddress?.id))?.ipAddress;
  const windows =
    vm.osProfile?.windowsConfiguration !== undefined ||
    vm.storageProfile?.osDisk?.osType?.toLowerCase() === 'windows';
  const labels = Object.fromEntries(
    Object.entries(vm.tags ?? {}).map(([k, v]) => [k.slice(0, 63), String(v).slice(0, 256)]),
  );
  return {
    id: discoveredId('azure', group, name),
    cloud: 'azure',
    name,
    cloudId: vm.id ?? name,
    ...(vm.location === undefined ? {} : { location: vm.location }),
    state,
    ...(privateAddress === undefined ? {} : { privateAddress }),
    ...(publicAddress === undefined ? {} : { publicAddress }),
    os: windows ? 'windows' : 'linux',
    ...(Object.keys(labels).length === 0 ? {} : { labels }),
  };
}
