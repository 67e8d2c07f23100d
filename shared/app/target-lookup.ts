import {
  configuredHypervisor,
  type HypervisorSettings,
  hypervisorTarget,
  isHypervisor,
} from '../domain/hypervisors.ts';
import type { Target } from '../domain/target.ts';
import type { TargetStore } from '../ports/target-store.ts';
import type { DiscoveryCache } from './discovery.ts';

/** What a lookup reads: the registry, and the settings hypervisor groups come from. */
export interface TargetLookupDeps {
  readonly targets: Pick<TargetStore, 'getTarget'>;
  readonly settings?: HypervisorSettings | undefined;
  /** Discovered cloud VMs, looked up when the registry has no row with the id. */
  readonly discovery?: Pick<DiscoveryCache, 'target'> | undefined;
}

/**
 * The target a run names, wherever it lives: a hypervisor group's name
 * (`proxmox`, `hyperv` …) is that integration when it is enabled and has a
 * host (undefined otherwise: selectionProblem then says it is not a
 * configured hypervisor); any other id is a registry row, else a discovered
 * cloud VM (`aws-i-…`). Every place that
 * turns a run's `targetId` into a target goes through here, so submit and
 * dispatch agree.
 *
 * @example
 * const target = await lookupTarget(deps, run.targetId); // VmTarget for "proxmox", a registry row otherwise
 */
export async function lookupTarget(deps: TargetLookupDeps, id: string): Promise<Target | undefined> {
  if (isHypervisor(id)) {
    const configured = deps.settings === undefined ? undefined : configuredHypervisor(deps.settings, id);
    return configured === undefined ? undefined : hypervisorTarget(configured);
  }
  return (await deps.targets.getTarget(id)) ?? deps.discovery?.target(id);
}
