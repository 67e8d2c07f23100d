import type { V1Pod } from '@kubernetes/client-node';
import { isEnvName } from '../../domain/env-name.ts';
import { LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import type { PreparedTask, RunAttempt } from '../../ports/launcher.ts';
import type { KubernetesLauncherOptions } from './config.ts';
import { configMapNameFor, formatKubernetesHandle, podNameFor, secretNameFor } from './handle.ts';
import type { KubeApi } from './kube-api.ts';
import { markerText, scanArchive } from './log-archive.ts';
import { configMapManifest, ownerReferenceTo, podManifest, secretManifest } from './manifests.ts';
import { hasStarted } from './pod-status.ts';

/**
 * Create the run attempt's pod, then its Secret and ConfigMap owned by it
 * (see KubernetesLauncher: adoption on 409, never a second pod after the
 * first was archived); the handle of the pod.
 *
 * @example
 * const handle = await launchPod(api, options, run, 'chrweav/ansible-cloud'); // 'kubernetes:remote-worker/rw-…#a1'
 */
export async function launchPod(
  api: KubeApi,
  o: KubernetesLauncherOptions,
  run: Run,
  image: string,
): Promise<string> {
  const key: RunAttempt = { runId: run.id, attempt: run.attempt };
  const namespace = o.namespace;
  let name: string;
  try {
    name = podNameFor(key);
  } catch (error) {
    throw new LaunchRejectedError(`Run ${run.id} cannot be named as a Kubernetes pod: ${error}`);
  }
  if (image.trim() === '') throw new LaunchRejectedError('No runner image to start the Kubernetes pod with');
  const handle = formatKubernetesHandle({ namespace, pod: name, attempt: run.attempt });

  // The pod ran and was cleaned up: its log is archived. Never create it a second time.
  if ((await scanArchive(o.archive, run.id, markerText(namespace, name, run.attempt))).found) {
    return handle;
  }

  const prepared = await o.prepare(run);
  const bad = Object.keys(prepared.secretEnv).filter((env) => !isEnvName(env));
  if (bad.length > 0) {
    throw new LaunchRejectedError(`Secret environment names are not valid variable names: ${bad.join(', ')}`);
  }
  const hasSecretEnv = Object.keys(prepared.secretEnv).length > 0;
  const body = podManifest({
    key,
    name,
    namespace,
    image,
    serviceAccountName: o.serviceAccountName,
    imagePullSecrets: o.imagePullSecrets ?? [],
    activeDeadlineSeconds: run.timeoutSeconds + (o.deadlineMarginSeconds ?? 300),
    terminationGracePeriodSeconds: o.cleanupGraceSeconds ?? 30,
    runAsUser: o.runAsUser ?? 10001,
    hasSecretEnv,
  });

  const created = await api.call(
    `create pod ${name}`,
    (options) => api.core.createNamespacedPod({ namespace, body }, options),
    { tolerate: [409] },
  );
  let pod: V1Pod;
  if (created.ok) {
    pod = created.value;
  } else {
    // 409: an earlier delivery of this attempt created it. Adopt it, never a second one.
    const existing = await api.readPod(namespace, name);
    if (existing === undefined) {
      throw new LauncherUnavailableError(
        `Kubernetes pod ${name} existed a moment ago and is gone now (being deleted?); will look again`,
      );
    }
    pod = existing;
    if (hasStarted(pod)) return handle;
  }

  try {
    await createSupport(api, o, key, name, pod, prepared, hasSecretEnv);
  } catch (error) {
    if (error instanceof LaunchRejectedError) {
      // Refused for good: the pod would wait forever for what it mounts. Remove it (no log yet).
      await api.deleteEach('pod', namespace, [name], 0).catch(() => {});
    }
    throw error;
  }
  return handle;
}

/** The pod's Secret (when it has secret environment) and ConfigMap, each owned by the pod; 409 is success. */
async function createSupport(
  api: KubeApi,
  o: KubernetesLauncherOptions,
  key: RunAttempt,
  pod: string,
  owner: V1Pod,
  prepared: PreparedTask,
  hasSecretEnv: boolean,
): Promise<void> {
  const namespace = o.namespace;
  const owners = ownerReferenceTo(owner);
  if (hasSecretEnv) {
    const body = secretManifest({ key, pod, namespace, env: prepared.secretEnv, owners });
    // The answer to a refused Secret may quote it: keep values out of the message, drop the cause.
    await api.call(
      `create secret ${secretNameFor(pod)}`,
      (options) => api.core.createNamespacedSecret({ namespace, body }, options),
      { tolerate: [409], secrets: Object.values(prepared.secretEnv) },
    );
  }
  const configMap = configMapManifest({ key, pod, namespace, spec: prepared.spec, owners });
  await api.call(
    `create configmap ${configMapNameFor(pod)}`,
    (options) => api.core.createNamespacedConfigMap({ namespace, body: configMap }, options),
    { tolerate: [409] },
  );
}
