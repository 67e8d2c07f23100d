import type { V1ConfigMap, V1OwnerReference, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { TaskSpec } from '../../domain/task.ts';
import {
  COMPONENT_LABEL,
  configMapNameFor,
  labelsFor,
  RUN_ID_ANNOTATION,
  type RunAttempt,
  secretNameFor,
} from './handle.ts';

/**
 * The three objects of one run attempt. Pure.
 *
 * - Pod: one container running the runner image (whose entrypoint is the
 *   task shim), `restartPolicy: Never`, the task service account with no API
 *   token mounted, the pull secrets, `activeDeadlineSeconds` = the run's
 *   timeout + a margin (image pull and shim start-up; the shim itself stops
 *   the tool at the timeout with exit 124), `terminationGracePeriodSeconds` =
 *   the cleanup grace. Its security context passes the Pod Security
 *   `restricted` level (non-root uid 10001, the `USER` of runners/Dockerfile, no
 *   privilege escalation, all capabilities dropped, RuntimeDefault seccomp),
 *   so the namespace can enforce it. The root filesystem stays writable: the
 *   shim and Ansible write to the home and temp directories.
 * - Secret `<pod>-env`: the run's secret environment (`PreparedTask.secretEnv`),
 *   injected whole with `envFrom`, so no value is in the pod spec. `KUBECONFIG`
 *   content arrives this way too: the shim writes it to a 0600 file itself.
 * - ConfigMap `<pod>-task`: the secret-free task spec (inventory included) as
 *   `task.json`, mounted read-only; `RW_TASK_FILE` points at it, so a large
 *   spec does not run into environment size limits.
 * Secret and ConfigMap are immutable (the kubelet need not watch them) and
 * owned by the pod, so the cluster's garbage collector removes them should the
 * pod be deleted by someone else; cleanup still deletes them itself.
 *
 * @example
 * const pod = podManifest({ run: { runId, attempt: 1 }, name, image, ... });
 */
export const CONTAINER_NAME = 'runner';
export const TASK_MOUNT_DIR = '/var/run/remote-worker/task';
export const TASK_FILE_KEY = 'task.json';
const TASK_VOLUME = 'task';

export interface PodManifestInput {
  readonly key: RunAttempt;
  readonly name: string;
  readonly namespace: string;
  readonly image: string;
  readonly serviceAccountName: string;
  readonly imagePullSecrets: readonly string[];
  readonly activeDeadlineSeconds: number;
  readonly terminationGracePeriodSeconds: number;
  readonly runAsUser: number;
  /** True when the run has secret environment: the pod then reads the Secret with `envFrom`. */
  readonly hasSecretEnv: boolean;
}

const metadataFor = (key: RunAttempt, name: string, namespace: string, component: string) => ({
  name,
  namespace,
  labels: { ...labelsFor(key), [COMPONENT_LABEL]: component },
  annotations: { [RUN_ID_ANNOTATION]: key.runId },
});

export function podManifest(input: PodManifestInput): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: metadataFor(input.key, input.name, input.namespace, 'task'),
    spec: {
      restartPolicy: 'Never',
      serviceAccountName: input.serviceAccountName,
      automountServiceAccountToken: false,
      // No service environment variables: the task needs none, and they would be visible to the tool.
      enableServiceLinks: false,
      activeDeadlineSeconds: input.activeDeadlineSeconds,
      terminationGracePeriodSeconds: input.terminationGracePeriodSeconds,
      ...(input.imagePullSecrets.length === 0
        ? {}
        : { imagePullSecrets: input.imagePullSecrets.map((name) => ({ name })) }),
      securityContext: {
        runAsNonRoot: true,
        runAsUser: input.runAsUser,
        runAsGroup: input.runAsUser,
        fsGroup: input.runAsUser,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: CONTAINER_NAME,
          image: input.image,
          env: [
            { name: 'RW_RUN_ID', value: input.key.runId },
            { name: 'RW_TASK_FILE', value: `${TASK_MOUNT_DIR}/${TASK_FILE_KEY}` },
          ],
          ...(input.hasSecretEnv ? { envFrom: [{ secretRef: { name: secretNameFor(input.name) } }] } : {}),
          volumeMounts: [{ name: TASK_VOLUME, mountPath: TASK_MOUNT_DIR, readOnly: true }],
          securityContext: {
            allowPrivilegeEscalation: false,
            privileged: false,
            capabilities: { drop: ['ALL'] },
          },
        },
      ],
      volumes: [
        {
          name: TASK_VOLUME,
          configMap: { name: configMapNameFor(input.name), defaultMode: 0o444 },
        },
      ],
    },
  };
}

/** The pod as owner of its Secret and ConfigMap, for the cluster's garbage collector. */
export function ownerReferenceTo(pod: V1Pod): V1OwnerReference[] {
  const name = pod.metadata?.name;
  const uid = pod.metadata?.uid;
  if (name === undefined || uid === undefined) return [];
  return [{ apiVersion: 'v1', kind: 'Pod', name, uid, blockOwnerDeletion: false, controller: false }];
}

/** What the pod's Secret and ConfigMap are made for: its run attempt, name and namespace, owned by the pod. */
interface SupportInput {
  readonly key: RunAttempt;
  readonly pod: string;
  readonly namespace: string;
  readonly owners: readonly V1OwnerReference[];
}

/** What a pod's Secret and ConfigMap share: core v1, owned by the pod (deleted with it), immutable. */
function podSupport<Kind extends 'Secret' | 'ConfigMap'>(
  kind: Kind,
  input: SupportInput,
  name: string,
  component: string,
) {
  return {
    apiVersion: 'v1',
    kind,
    metadata: {
      ...metadataFor(input.key, name, input.namespace, component),
      ownerReferences: [...input.owners],
    },
    immutable: true,
  };
}

export function secretManifest(
  input: SupportInput & { readonly env: Readonly<Record<string, string>> },
): V1Secret {
  const data: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.env)) {
    data[name] = Buffer.from(value, 'utf8').toString('base64');
  }
  return { ...podSupport('Secret', input, secretNameFor(input.pod), 'task-env'), type: 'Opaque', data };
}

export function configMapManifest(input: SupportInput & { readonly spec: TaskSpec }): V1ConfigMap {
  return {
    ...podSupport('ConfigMap', input, configMapNameFor(input.pod), 'task-spec'),
    data: { [TASK_FILE_KEY]: JSON.stringify(input.spec) },
  };
}
