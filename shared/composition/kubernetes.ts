import { kubernetesSettingsFrom, loadKubeConfig } from '../adapters/kubernetes/config.ts';
import { KubernetesLauncher } from '../adapters/kubernetes/launcher.ts';
import type { Settings } from '../config/load-settings.ts';
import { isTerminal, type Run } from '../domain/run.ts';
import type { Clock } from '../ports/clock.ts';
import type { PreparedTask } from '../ports/launcher.ts';
import type { LogStore } from '../ports/log-store.ts';
import type { Logger } from '../ports/logger.ts';
import type { RunStore } from '../ports/run-store.ts';

/**
 * The `kubernetes` runner of a deployment: settings checked, client built
 * from `kubernetes_kubeconfig` or the pod's own service account. Answers why
 * not when it cannot be built, with the seeds' "not configured" wording.
 * Import this module only when the runner is wanted (`await import(…)`): it
 * loads @kubernetes/client-node, most of an idle local mode's memory.
 *
 * @example
 * const built = buildKubernetesLauncher({ settings, env: process.env, store, archive: logs, clock, prepare });
 * if ('launcher' in built) await collectKubernetesOrphans(built.launcher, store, logger);
 */
export function buildKubernetesLauncher(context: {
  readonly settings: Settings;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly archive: LogStore;
  readonly clock: Clock;
  readonly prepare: (run: Run) => Promise<PreparedTask>;
}): { readonly launcher: KubernetesLauncher } | { readonly unavailable: string } {
  let k8s: ReturnType<typeof kubernetesSettingsFrom>;
  try {
    k8s = kubernetesSettingsFrom(context.settings, context.env);
  } catch (error) {
    return { unavailable: (error as Error).message };
  }
  return {
    launcher: new KubernetesLauncher({
      kubeConfig: loadKubeConfig(k8s.kubeconfig),
      namespace: k8s.namespace,
      serviceAccountName: k8s.serviceAccountName,
      imagePullSecrets: k8s.imagePullSecrets,
      cleanupGraceSeconds: k8s.cleanupGraceSeconds,
      pollIntervalSeconds: k8s.pollIntervalSeconds,
      // Values reach the pod only through its own Secret, so they are resolved here.
      prepare: context.prepare,
      archive: context.archive,
      clock: context.clock,
    }),
  };
}

/** On start-up: remove the pods, Secrets and ConfigMaps of runs that ended or are unknown. */
export async function collectKubernetesOrphans(
  launcher: KubernetesLauncher,
  store: RunStore,
  logger: Logger,
): Promise<void> {
  try {
    const report = await launcher.collectOrphans(async (runId) => {
      const run = await store.getRun(runId);
      return run !== undefined && !isTerminal(run.state);
    });
    if (report.collected.length > 0) logger.info('kubernetes: collected orphaned run objects', { ...report });
  } catch (error) {
    logger.warn('kubernetes: orphan collection failed', { error: error as Error });
  }
}
