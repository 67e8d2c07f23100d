import {
  DescribeInstancesCommand,
  type DescribeInstancesCommandOutput,
  EC2Client,
  type Instance,
} from '@aws-sdk/client-ec2';
import { type DiscoveredVm, discoveredId } from '../../domain/discovery.ts';
import type { VmDiscovery } from '../../ports/vm-discovery.ts';

export interface Ec2VmDiscoveryOptions {
  /** Regions to list; one client each, configured from the environment (credentials, AWS_ENDPOINT_URL). */
  readonly regions: readonly string[];
  /** For tests: the client of a region. */
  readonly clientFor?: (region: string) => EC2Client;
}

/**
 * VmDiscovery over EC2 DescribeInstances, every page, every listed region.
 * Terminated instances are left out (they vanish within the hour anyway);
 * stopped ones are kept so the list can say why they cannot be targeted.
 * The name is the `Name` tag, else the instance id; Windows is EC2's
 * `Platform: windows`.
 *
 * @example
 * const vms = await new Ec2VmDiscovery({ regions: ['us-east-1'] }).discover();
 */
export class Ec2VmDiscovery implements VmDiscovery {
  readonly cloud = 'aws' as const;
  readonly #clients = new Map<string, EC2Client>();

  constructor(private readonly options: Ec2VmDiscoveryOptions) {}

  async discover(): Promise<readonly DiscoveredVm[]> {
    const perRegion = await Promise.all(this.options.regions.map((region) => this.#region(region)));
    return perRegion.flat();
  }

  #client(region: string): EC2Client {
    let client = this.#clients.get(region);
    if (client === undefined) {
      client = this.options.clientFor?.(region) ?? new EC2Client({ region });
      this.#clients.set(region, client);
    }
    return client;
  }

  async #region(region: string): Promise<DiscoveredVm[]> {
    const vms: DiscoveredVm[] = [];
    let token: string | undefined;
    do {
      let page: DescribeInstancesCommandOutput;
      try {
        page = await this.#client(region).send(
          new DescribeInstancesCommand({
            MaxResults: 1000,
            ...(token === undefined ? {} : { NextToken: token }),
          }),
        );
      } catch (error) {
        // The discovery service records this per cloud; the SDK's message names no credential.
        throw new Error(
          `EC2 DescribeInstances in ${region} failed: ${(error as Error).name}: ${(error as Error).message}`,
          {
            cause: error,
          },
        );
      }
      for (const reservation of page.Reservations ?? []) {
        for (const instance of reservation.Instances ?? []) {
          const vm = toVm(instance, region);
          if (vm !== undefined) vms.push(vm);
        }
      }
      token = page.NextToken === '' ? undefined : page.NextToken;
    } while (token !== undefined);
    return vms;
  }
}

function toVm(instance: Instance, region: string): DiscoveredVm | undefined {
  const id = instance.InstanceId;
  const state = instance.State?.Name ?? 'unknown';
  if (id === undefined || state === 'terminated') return undefined;
  const name = instance.Tags?.find((t) => t.Key === 'Name')?.Value;
  const labels = Object.fromEntries(
    (instance.Tags ?? []).flatMap((t) =>
      t.Key === undefined || t.Value === undefined ? [] : [[t.Key.slice(0, 63), t.Value.slice(0, 256)]],
    ),
  );
  return {
    id: discoveredId('aws', id),
    cloud: 'aws',
    name: name === undefined || name === '' ? id : name,
    cloudId: id,
    location: instance.Placement?.AvailabilityZone ?? region,
    state,
    ...(instance.PrivateIpAddress === undefined ? {} : { privateAddress: instance.PrivateIpAddress }),
    ...(instance.PublicIpAddress === undefined ? {} : { publicAddress: instance.PublicIpAddress }),
    // The API answers `windows`; the SDK's type says `Windows`.
    os: instance.Platform?.toLowerCase() === 'windows' ? 'windows' : 'linux',
    ...(Object.keys(labels).length === 0 ? {} : { labels }),
  };
}
