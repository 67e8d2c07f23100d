import type { protos } from '@google-cloud/compute';
// The instances client alone, not the package's index: the index loads all 260 of the package's clients
// (v1, v1beta, v1small) and its 30 MB generated protos.js, some 2.5 s and 150 MB more at a discovery's first
// refresh in a Lambda bundle, and 15 s more to bundle (docs/performance.md, Google Cloud clients). The package
// has no `exports` map, so this path is as public as the index; test/integration/gce-vm-discovery.test.ts
// drives it.
import { InstancesClient } from '@google-cloud/compute/build/src/v1/instances_client.js';
import { type DiscoveredVm, discoveredId } from '../../domain/discovery.ts';
import type { VmDiscovery } from '../../ports/vm-discovery.ts';

type Instance = protos.google.cloud.compute.v1.IInstance;

export interface GceVmDiscoveryOptions {
  readonly project: string;
  /** Zones to list; unset, every zone (aggregatedList). */
  readonly zones?: readonly string[];
  /** Default: one client from the environment's Google credentials (REST transport). */
  readonly client?: InstancesClient;
}

/**
 * VmDiscovery over the Compute Engine instances API (`@google-cloud/compute`,
 * REST): `aggregatedList` for the whole project, or `list` per zone, every
 * page. Status is GCE's (RUNNING, STOPPED, TERMINATED, SUSPENDED …) in lower
 * case; the address is the first interface's `networkIP`, the public one its
 * first access config's `natIP`. Windows is a boot disk with the `WINDOWS`
 * guest OS feature or a `windows-cloud` license.
 *
 * @example
 * const vms = await new GceVmDiscovery({ project: 'acme-prod' }).discover();
 */
export class GceVmDiscovery implements VmDiscovery {
  readonly cloud = 'gcp' as const;
  readonly #client: InstancesClient;

  constructor(private readonly options: GceVmDiscoveryOptions) {
    this.#client = options.client ?? new InstancesClient({ fallback: true });
  }

  async discover(): Promise<readonly DiscoveredVm[]> {
    const { project, zones } = this.options;
    const vms: DiscoveredVm[] = [];
    try {
      if (zones === undefined) {
        for await (const [, scoped] of this.#client.aggregatedListAsync({ project })) {
          for (const instance of scoped.instances ?? []) pushVm(vms, instance);
        }
      } else {
        for (const zone of zones) {
          for await (const instance of this.#client.listAsync({ project, zone })) pushVm(vms, instance);
        }
      }
    } catch (error) {
      // The discovery service records this per cloud; the client's message names no credential.
      throw new Error(`GCE instances of ${project} could not be listed: ${(error as Error).message}`, {
        cause: error,
      });
    }
    return vms;
  }
}

const lastSegment = (url: string | null | undefined): string | undefined =>
  url === null || url === undefined ? undefined : url.slice(url.lastIndexOf('/') + 1);

function pushVm(vms: DiscoveredVm[], instance: Instance): void {
  const name = instance.name ?? undefined;
  const zone = lastSegment(instance.zone);
  if (name === undefined || zone === undefined) return;
  const nic = instance.networkInterfaces?.[0];
  const privateAddress = nic?.networkIP ?? undefined;
  const publicAddress = nic?.accessConfigs?.find((c) => c.natIP)?.natIP ?? undefined;
  const windows = (instance.disks ?? []).some(
    (d) =>
      (d.guestOsFeatures ?? []).some((f) => f.type === 'WINDOWS') ||
      (d.licenses ?? []).some((l) => l.includes('/windows-cloud/')),
  );
  const labels = Object.fromEntries(
    Object.entries(instance.labels ?? {}).map(([k, v]) => [k.slice(0, 63), String(v).slice(0, 256)]),
  );
  vms.push({
    id: discoveredId('gcp', zone, name),
    cloud: 'gcp',
    name,
    cloudId: String(instance.id ?? name),
    location: zone,
    state: (instance.status ?? 'unknown').toLowerCase(),
    ...(privateAddress === undefined ? {} : { privateAddress }),
    ...(publicAddress === undefined ? {} : { publicAddress }),
    os: windows ? 'windows' : 'linux',
    ...(Object.keys(labels).length === 0 ? {} : { labels }),
  });
}
