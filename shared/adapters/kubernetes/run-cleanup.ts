import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
import type { PodFollowers } from './follower.ts';
import {
  attemptOf,
  configMapNameFor,
  type KubernetesHandle,
  MANAGED_SELECTOR,
  RUN_ID_ANNOTATION,
  runSelector,
  secretNameFor,
} from './handle.ts';
import type { KubeApi } from './kube-api.ts';
import type { PodArchiver } from './pod-archive.ts';
import { hasEnded } from './pod-status.ts';

/** What `collectOrphans` did. */
export interface OrphanReport {
  /** Runs whose objects were archived and deleted. */
  readonly collected: readonly string[];
  /** Runs still active: left alone. */
  readonly kept: readonly string[];
  /** Managed objects without a run id annotation: left alone, named here. */
  readonly unidentified: readonly string[];
}

export interface OrphanReport {
  /** Runs whose objects were archived and deleted. */
  readonly collected: readonly string[];
  /** Runs still active: left alone. */
  readonly kept: readonly string[];
  /** Managed objects without a run id annotation: left alone, named here. */
  readonly unidentified: readonly string[];
}

/** What cleaning up a run uses; `graceSeconds` is the pods' delete grace (`cleanup_grace_seconds`). */
export interface CleanupDeps {
  readonly api: KubeApi;
  readonly archiver: PodArchiver;
  readonly followers: PodFollowers;
  readonly graceSeconds: number;
}

/** A run's managed objects as listed: its pods, and the pod names its objects were made for. */
export interface RunObjects {
  readonly pods: V1Pod[];
  readonly names: Set<string>;
}

/**
 * Group managed pods and ConfigMaps by the run id annotation. A ConfigMap
 * stands for its pod (`<pod>-task`); objects without the annotation are
 * named in `unidentified` (`pod/<name>`, `configmap/<name>`).
 */
export function groupByRun(
  pods: readonly V1Pod[],
  configMaps: readonly V1ConfigMap[],
): { readonly byRun: Map<string, RunObjects>; readonly unidentified: string[] } {
  const byRun = new Map<string, RunObjects>();
  const unidentified: string[] = [];
  const add = (kind: string, name: string | undefined, runId: string | undefined, pod?: V1Pod) => {
    if (name === undefined) return;
    if (runId === undefined || runId === '') {
      unidentified.push(`${kind}/${name}`);
      return;
    }
    const entry = byRun.get(runId) ?? { pods: [], names: new Set<string>() };
    if (pod !== undefined) entry.pods.push(pod);
    entry.names.add(kind === 'configmap' && name.endsWith('-task') ? name.slice(0, -'-task'.length) : name);
    byRun.set(runId, entry);
  };
  for (const pod of pods) add('pod', pod.metadata?.name, pod.metadata?.annotations?.[RUN_ID_ANNOTATION], pod);
  for (const cm of configMaps)
    add('configmap', cm.metadata?.name, cm.metadata?.annotations?.[RUN_ID_ANNOTATION]);
  return { byRun, unidentified };
}

/**
 * Archive each pod's log (earliest attempt first), then delete Secrets,
 * ConfigMaps and pods by name and by the run's label selector, pods last so
 * that an interrupted cleanup leaves something `collectOrphans` can find.
 */
export async function removeRun(
  deps: CleanupDeps,
  runId: string,
  namespace: string,
  objects: { readonly pods: readonly V1Pod[]; readonly names: Iterable<string> },
  handle?: KubernetesHandle,
): Promise<void> {
  const { api, archiver } = deps;
  const ordered = [...objects.pods].sort(
    (a, b) => (attemptOf(a.metadata?.labels) ?? 0) - (attemptOf(b.metadata?.labels) ?? 0),
  );
  for (const pod of ordered) {
    const name = pod.metadata?.name;
    if (name === undefined) continue;
    const attempt = name === handle?.pod ? handle.attempt : attemptOf(pod.metadata?.labels);
    if (attempt === undefined) continue;
    await archiver.archivePod(runId, { namespace, pod: name, attempt }, { final: hasEnded(pod) });
  }
  const podNames = [
    ...new Set([
      ...objects.names,
      ...objects.pods.flatMap((p) => (p.metadata?.name === undefined ? [] : [p.metadata.name])),
    ]),
  ];
  const selector = runSelector(runId);
  await api.deleteEach('secret', namespace, podNames.map(secretNameFor));
  await api.deleteLabelled('secrets', namespace, selector);
  await api.deleteEach('configmap', namespace, podNames.map(configMapNameFor));
  await api.deleteLabelled('configmaps', namespace, selector);
  await api.deleteEach('pod', namespace, podNames, deps.graceSeconds);
}

/**
 * Find every object this control plane manages in `namespace` and remove
 * those whose run is not active, archiving pod logs first (see
 * KubernetesLauncher.collectOrphans).
 */
export async function collectOrphans(
  deps: CleanupDeps,
  namespace: string,
  isActive: (runId: string) => Promise<boolean>,
): Promise<OrphanReport> {
  const pods = await deps.api.listPods(namespace, MANAGED_SELECTOR);
  const configMaps = await deps.api.listConfigMaps(namespace, MANAGED_SELECTOR);
  const { byRun, unidentified } = groupByRun(pods, configMaps.items);

  const collected: string[] = [];
  const kept: string[] = [];
  for (const [runId, entry] of [...byRun].sort(([a], [b]) => a.localeCompare(b))) {
    if (await isActive(runId)) {
      kept.push(runId);
      continue;
    }
    await deps.followers.stop(runId);
    await removeRun(deps, runId, namespace, entry);
    collected.push(runId);
  }
  return { collected, kept, unidentified };
}
