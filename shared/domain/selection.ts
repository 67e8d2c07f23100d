import { isHypervisor, notConfiguredReason } from './hypervisors.ts';
import type { RunKind } from './run.ts';
import { type Target, untargetableReason } from './target.ts';

/** Which target kind each run kind acts on; portainer runs take no target. */
const TARGET_KIND_FOR: Record<RunKind, Target['kind'] | undefined> = {
  vm: 'vm',
  cluster_play: 'cluster',
  database_play: 'database',
  k8s_op: 'cluster',
  portainer: undefined,
};

/**
 * Why this target cannot be selected for this kind of run, or undefined.
 * These are selection problems: they refuse a request before any run exists,
 * unlike runner refusals, which depend on settings and are recorded.
 */
export function selectionProblem(
  kind: RunKind,
  target: Target | undefined,
  targetId?: string,
): string | undefined {
  const wanted = TARGET_KIND_FOR[kind];
  if (wanted === undefined) {
    return targetId === undefined
      ? undefined
      : 'Portainer runs act on the one configured connection and take no targetId';
  }
  if (targetId === undefined) return `A ${kind} run needs a targetId (a ${wanted} target)`;
  if (target === undefined) {
    return isHypervisor(targetId)
      ? notConfiguredReason(targetId)
      : `No target with id ${targetId} is registered`;
  }
  if (target.kind !== wanted) {
    return `Target ${target.id} is a ${target.kind.replace('_', ' ')}; a ${kind} run needs a ${wanted}`;
  }
  return untargetableReason(target);
}
