import { createHash } from 'node:crypto';
import { isDnsLabel } from '../../domain/kubernetes-names.ts';
import type { RunAttempt } from '../../ports/launcher.ts';

/**
 * How a run's Kubernetes objects are named, labelled and found again. Pure;
 * shared by the launcher, the orphan collector and the tests.
 *
 * - Pod `rw-<run id, lower-cased and sanitised>-<attempt>-<hash>`: a DNS-1123
 *   label (≤ 63 characters, `[a-z0-9-]`), deterministic from run id and
 *   attempt, so a redelivered launch meets its own pod (409) instead of making
 *   a second one. The hash (of the exact run id and attempt) keeps two run
 *   ids that sanitise alike apart; a run id too long to fit is cut before it.
 * - Secret `<pod>-env`, ConfigMap `<pod>-task`.
 * - Labels on every object: `app.kubernetes.io/managed-by=remote-worker`,
 *   `remote-worker/run-id=<label value>` and `remote-worker/attempt=<n>`; the
 *   pod also `app.kubernetes.io/component=task`, which a NetworkPolicy can
 *   select. A label value is at most 63 characters of `[A-Za-z0-9-_.]`; a run
 *   id that is not one is replaced by a hash (still deterministic, so a label
 *   selector finds a half-created set again).
 * - Annotation `remote-worker/run-id`: the exact run id, which the orphan
 *   collector needs (a hashed label cannot be turned back into an id).
 * - Handle `kubernetes:<namespace>/<pod>#a<attempt>`: stored on the run.
 *
 * @example
 * const pod = podNameFor({ runId: '01JD3Q6Z8W3S9V0M2K4T7YB5NE', attempt: 1 });
 * // 'rw-01jd3q6z8w3s9v0m2k4t7yb5ne-1-5c1d…'
 * formatKubernetesHandle({ namespace: 'remote-worker', pod, attempt: 1 });
 * // 'kubernetes:remote-worker/rw-01jd3q6z8w3s9v0m2k4t7yb5ne-1-5c1d…#a1'
 */
export type { RunAttempt };

export interface KubernetesHandle {
  readonly namespace: string;
  readonly pod: string;
  readonly attempt: number;
}

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'remote-worker';
export const COMPONENT_LABEL = 'app.kubernetes.io/component';
export const RUN_ID_LABEL = 'remote-worker/run-id';
export const ATTEMPT_LABEL = 'remote-worker/attempt';
export const RUN_ID_ANNOTATION = 'remote-worker/run-id';

const PREFIX = 'kubernetes:';
const DNS_LABEL_MAX = 63;
const HASH_CHARS = 10;
const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const ATTEMPT = /^(0|[1-9]\d{0,8})$/;

const digest = (text: string, chars: number): string =>
  createHash('sha256').update(text).digest('hex').slice(0, chars);

const checkAttempt = (attempt: number): void => {
  if (!Number.isSafeInteger(attempt) || attempt < 0 || attempt > 999_999_999) {
    throw new RangeError(`attempt ${attempt} is not a small non-negative integer`);
  }
};

/** Lower-case, every run of other characters to one `-`, no `-` at either end. */
const slug = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');

export function podNameFor({ runId, attempt }: RunAttempt): string {
  checkAttempt(attempt);
  const tail = `-${attempt}-${digest(`${runId}\n${attempt}`, HASH_CHARS)}`;
  const room = DNS_LABEL_MAX - 'rw-'.length - tail.length;
  const body = slug(runId).slice(0, room).replace(/-+$/, '');
  return body === '' ? `rw${tail}` : `rw-${body}${tail}`;
}

export const secretNameFor = (pod: string): string => `${pod}-env`;
export const configMapNameFor = (pod: string): string => `${pod}-task`;

/** The run id itself when it is a valid label value, else a sanitised prefix and a hash of it. */
export function runIdLabelValue(runId: string): string {
  if (LABEL_VALUE.test(runId)) return runId;
  const hash = digest(runId, 20);
  const head = runId
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, DNS_LABEL_MAX - hash.length - 1)
    .replace(/-+$/, '');
  return head === '' ? `h${hash}` : `${head}-${hash}`;
}

/** Labels every object of a run attempt carries. */
export function labelsFor({ runId, attempt }: RunAttempt): Record<string, string> {
  return {
    [MANAGED_BY_LABEL]: MANAGED_BY,
    [RUN_ID_LABEL]: runIdLabelValue(runId),
    [ATTEMPT_LABEL]: String(attempt),
  };
}

/** Everything this control plane manages in the namespace. */
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;

/** Every object of one run, whatever the attempt. */
export const runSelector = (runId: string): string =>
  `${MANAGED_SELECTOR},${RUN_ID_LABEL}=${runIdLabelValue(runId)}`;

export function formatKubernetesHandle(handle: KubernetesHandle): string {
  return `${PREFIX}${handle.namespace}/${handle.pod}#a${handle.attempt}`;
}

export function parseKubernetesHandle(handle: string | undefined): KubernetesHandle | undefined {
  const match = /^kubernetes:([^/#]+)\/([^/#]+)#a(\d{1,9})$/.exec(handle ?? '');
  if (match === null) return undefined;
  const [, namespace = '', pod = '', attempt = ''] = match;
  if (!isDnsLabel(namespace) || !isDnsLabel(pod) || !ATTEMPT.test(attempt)) return undefined;
  return { namespace, pod, attempt: Number(attempt) };
}

/** Attempt from an object's label; undefined when absent or not a number. */
export function attemptOf(labels: Readonly<Record<string, string>> | undefined): number | undefined {
  const value = labels?.[ATTEMPT_LABEL];
  return value !== undefined && ATTEMPT.test(value) ? Number(value) : undefined;
}
