import {
  configuredHypervisor,
  type HypervisorSettings,
  hypervisorOf,
  hypervisorRunProblem,
  notConfiguredReason,
} from '../domain/hypervisors.ts';
import type { Target } from '../domain/target.ts';

/**
 * Why a run on a hypervisor group cannot go ahead with these settings (the
 * integration was disabled since it was submitted; Proxmox with an API token
 * but no password), or undefined. Part of planRun, so submit and dispatch
 * refuse alike; other targets pass.
 */
export function hypervisorPlanProblem(settings: HypervisorSettings, target: Target): string | undefined {
  const name = hypervisorOf(target);
  if (name === undefined) return undefined;
  const configured = configuredHypervisor(settings, name);
  return configured === undefined ? notConfiguredReason(name) : hypervisorRunProblem(settings, configured);
}
