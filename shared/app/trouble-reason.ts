import { hypervisorOf } from '../domain/hypervisors.ts';
import type { Run } from '../domain/run.ts';
import { type Trouble, troubleMessage } from '../domain/troubleshooting.ts';
import { lookupTarget, type TargetLookupDeps } from './target-lookup.ts';

/**
 * A failed run's reason with the seeds' troubleshooting message in front:
 * `<message>. <what happened>`. The message depends on the run's target
 * (its cloud, or the hypervisor group), read here; a target gone since
 * leaves the generic wording.
 *
 * @example
 * await troubledReason(deps, run, 'ssh_auth_failed', 'The task exited with code 4: fatal: …');
 * // 'SSH authentication failed on cloud target (AWS) — verify ansible_ssh_key_sm_name … The task exited …'
 */
export async function troubledReason(
  deps: TargetLookupDeps,
  run: Pick<Run, 'kind' | 'runner' | 'targetId'>,
  trouble: Trouble,
  what: string,
): Promise<string> {
  const target =
    run.targetId === undefined ? undefined : await lookupTarget(deps, run.targetId).catch(() => undefined);
  const hypervisor = target === undefined ? undefined : hypervisorOf(target);
  const message = troubleMessage(trouble, {
    kind: run.kind,
    runner: run.runner,
    cloud: target?.cloud,
    hypervisor,
  });
  return `${message}. ${what}`;
}
