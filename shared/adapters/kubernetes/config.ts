import { KubeConfig } from '@kubernetes/client-node';
import type { Settings } from '../../config/settings.ts';
import { RunnerNotConfiguredError } from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import type { Clock } from '../../ports/clock.ts';
import type { PreparedTask } from '../../ports/launcher.ts';
import type { LogStore } from '../../ports/log-store.ts';

/** The settings the kubernetes runner reads, checked, with where its API credentials come from. */
export interface KubernetesSettings {
  readonly namespace: string;
  readonly serviceAccountName: string;
  readonly imagePullSecrets: readonly string[];
  readonly pollIntervalSeconds: number;
  readonly cleanupGraceSeconds: number;
  /** `kubernetes_kubeconfig`, or the control plane's own pod service account. */
  readonly kubeconfig: { readonly kind: 'file'; readonly path: string } | { readonly kind: 'in-cluster' };
}

type KubernetesSettingKeys =
  | 'kubernetes_namespace'
  | 'kubernetes_kubeconfig'
  | 'kubernetes_service_account'
  | 'kubernetes_pull_secrets'
  | 'poll_interval_seconds'
  | 'cleanup_grace_seconds';

/**
 * Read the `kubernetes_*` settings. Their shape (DNS-1123 names, a readable
 * kubeconfig) is the settings schema's to check, at start-up in both modes
 * (shared/config/settings.ts), so nothing here can be invalid. Without
 * `kubernetes_kubeconfig` the control plane must run in a cluster
 * (`KUBERNETES_SERVICE_HOST` in `env`, which the composition root passes);
 * otherwise the runner is not configured, refused with the seeds' message.
 *
 * @example
 * const k8s = kubernetesSettingsFrom(settings, process.env);
 * const kubeConfig = loadKubeConfig(k8s.kubeconfig);
 */
export function kubernetesSettingsFrom(
  settings: Pick<Settings, KubernetesSettingKeys>,
  env: Readonly<Record<string, string | undefined>>,
): KubernetesSettings {
  const pullSecrets = settings.kubernetes_pull_secrets ?? [];
  const path = settings.kubernetes_kubeconfig?.trim();
  let kubeconfig: KubernetesSettings['kubeconfig'];
  if (path !== undefined && path !== '') kubeconfig = { kind: 'file', path };
  else if ((env.KUBERNETES_SERVICE_HOST ?? '') !== '') kubeconfig = { kind: 'in-cluster' };
  else {
    throw new RunnerNotConfiguredError(
      'Kubernetes pod runner is not configured: set kubernetes_kubeconfig (the control plane is not running in a cluster: KUBERNETES_SERVICE_HOST is not set)',
    );
  }
  return {
    namespace: settings.kubernetes_namespace,
    serviceAccountName: settings.kubernetes_service_account,
    imagePullSecrets: pullSecrets,
    pollIntervalSeconds: settings.poll_interval_seconds,
    cleanupGraceSeconds: settings.cleanup_grace_seconds,
    kubeconfig,
  };
}

/** The API client configuration: the kubeconfig file's current context, or the pod's service account. */
export function loadKubeConfig(source: KubernetesSettings['kubeconfig']): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (source.kind === 'file') kubeConfig.loadFromFile(source.path);
  else kubeConfig.loadFromCluster();
  return kubeConfig;
}

/** What a KubernetesLauncher is built from: the checked settings, its client, and its peers. */
export interface KubernetesLauncherOptions {
  readonly kubeConfig: KubeConfig;
  /** Namespace of the task pods, Secrets and ConfigMaps (`kubernetes_namespace`). Must exist. */
  readonly namespace: string;
  /** Service account of the task pods (`kubernetes_service_account`): no permissions, no token. */
  readonly serviceAccountName: string;
  /** `kubernetes_pull_secrets`. */
  readonly imagePullSecrets?: readonly string[];
  /** The run's TaskSpec and secret environment (shared/app/task-prep.ts `prepareTask`). */
  readonly prepare: (run: Run) => Promise<PreparedTask>;
  /** Where a pod's log goes before the pod is deleted; `logs` reads it afterwards. */
  readonly archive: LogStore;
  /** `cleanup_grace_seconds` (default 30): the pod's termination grace, and cleanup's delete grace. */
  readonly cleanupGraceSeconds?: number;
  /** `poll_interval_seconds` (default 3): how often `follow` looks at the pod while it waits or streams. */
  readonly pollIntervalSeconds?: number;
  /** Added to the run's timeout for `activeDeadlineSeconds` (default 300: image pull and shim start-up). */
  readonly deadlineMarginSeconds?: number;
  /** How long an image pull or container config failure may persist before the run fails (default 120). */
  readonly stuckAfterSeconds?: number;
  /** uid and gid of the runner container (default 10001, the runner images' `USER`). */
  readonly runAsUser?: number;
  /** Most lines one `logs` call returns, below the `limit` a caller asks for (tests use small pages). */
  readonly pageLines?: number;
  /** Timeout of one API request (default 30 s). */
  readonly requestTimeoutMs?: number;
  /** Retries of throttled (429) and failed (5xx, no answer) API calls; small `baseMs` in tests. */
  readonly retry?: { readonly attempts?: number; readonly baseMs?: number; readonly maxMs?: number };
  readonly clock?: Clock;
}
