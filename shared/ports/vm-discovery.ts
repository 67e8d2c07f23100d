import type { DiscoveredVm } from '../domain/discovery.ts';
import type { HostingCloud } from '../domain/target.ts';

/**
 * Lists one cloud's virtual machines. Each adapter pages through its cloud's
 * API and maps every VM, whatever its state; the targeting rules are the
 * domain's (discoveredRow).
 *
 * @example
 * const vms = await new Ec2VmDiscovery({ regions: ['eu-west-1'] }).discover();
 */
export interface VmDiscovery {
  readonly cloud: HostingCloud;
  discover(): Promise<readonly DiscoveredVm[]>;
}
