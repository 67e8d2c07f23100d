import {
  type ConfigurationOptions,
  CoreV1Api,
  type KubeConfig,
  Log,
  Observable,
  type RequestContext,
  type ResponseContext,
  type V1ConfigMapList,
  type V1Pod,
} from '@kubernetes/client-node';
import { LauncherUnavailableError } from '../../domain/errors.ts';
import { withRetry } from '../retry.ts';
import { isTransient, kubeError, retryAfterMs, statusOf } from './errors.ts';
import { CONTAINER_NAME } from './manifests.ts';
import { type LogPosition, newLineFilter, type PodLogLine, parsePodLog, sinceTimeOf } from './pod-log.ts';

/**
 * Every API call the launcher makes, as RBAC rules for its namespaced Role
 * (examples/kubernetes-runner/rbac.yaml grants exactly these; a test checks
 * both against the requests the launcher really sent). Secrets have no `get`
 * or `list`: the control plane can create and delete them but read none,
 * not even the pull secrets in the same namespace. That is why a run's Secret
 * is found by name and removed by label with `deletecollection`, never listed.
 */
export const KUBERNETES_RBAC_RULES = [
  { apiGroups: [''], resources: ['pods'], verbs: ['create', 'delete', 'get', 'list'] },
  { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
  { apiGroups: [''], resources: ['secrets'], verbs: ['create', 'delete', 'deletecollection'] },
  { apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'delete', 'deletecollection', 'list'] },
] as const;

/** A read of the pod log returns at most this much; a longer log is read in several steps. */
const LOG_READ_BYTES = 4 * 1024 * 1024;

export interface KubeApiOptions {
  readonly kubeConfig: KubeConfig;
  /** Timeout of one API request (default 30 s). */
  readonly requestTimeoutMs?: number;
  /** Retries of throttled (429) and failed (5xx, no answer) API calls; small `baseMs` in tests. */
  readonly retry?: { readonly attempts?: number; readonly baseMs?: number; readonly maxMs?: number };
}

export type CallResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly status: number };

export interface LogRead {
  readonly lines: readonly PodLogLine[];
  /** The read stopped at LOG_READ_BYTES: more may follow. */
  readonly cut: boolean;
}

/** Where a pod is: its namespace and name. */
export interface PodRef {
  readonly namespace: string;
  readonly pod: string;
}

/**
 * The Kubernetes API as the launcher uses it: the generated CoreV1 client
 * with retries on 429 (honouring `Retry-After`), 5xx and no answer, a timeout
 * per request, tolerated statuses returned as answers, and every other
 * failure a domain error (LauncherUnavailableError when it may pass).
 *
 * @example
 * const api = new KubeApi({ kubeConfig });
 * const pod = await api.readPod('remote-worker', 'rw-…-a1'); // undefined when there is none
 * await api.deleteEach('secret', 'remote-worker', ['rw-…-a1-env']); // 404 is success
 */
export class KubeApi {
  readonly core: CoreV1Api;
  /** The client's log streamer (`follow=true`), for follower.ts. */
  readonly log: Log;
  readonly #o: KubeApiOptions;

  constructor(options: KubeApiOptions) {
    this.#o = options;
    this.core = options.kubeConfig.makeApiClient(CoreV1Api);
    this.log = new Log(options.kubeConfig);
  }

  async readPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    const result = await this.call(
      `read pod ${name}`,
      (o) => this.core.readNamespacedPod({ name, namespace }, o),
      { tolerate: [404] },
    );
    return result.ok ? result.value : undefined;
  }

  async listPods(namespace: string, labelSelector: string): Promise<V1Pod[]> {
    const list = await this.must('list pods', (o) =>
      this.core.listNamespacedPod({ namespace, labelSelector }, o),
    );
    return [...list.items];
  }

  listConfigMaps(namespace: string, labelSelector: string): Promise<V1ConfigMapList> {
    return this.must('list configmaps', (o) =>
      this.core.listNamespacedConfigMap({ namespace, labelSelector }, o),
    );
  }

  /** Delete each named object, one after another; one already gone (404) is success. */
  async deleteEach(
    kind: 'secret' | 'configmap' | 'pod',
    namespace: string,
    names: readonly string[],
    gracePeriodSeconds?: number,
  ): Promise<void> {
    type Remove = (name: string, o: ConfigurationOptions) => Promise<unknown>;
    const remove: Remove = {
      secret: (name: string, o: ConfigurationOptions) =>
        this.core.deleteNamespacedSecret({ name, namespace }, o),
      configmap: (name: string, o: ConfigurationOptions) =>
        this.core.deleteNamespacedConfigMap({ name, namespace }, o),
      pod: (name: string, o: ConfigurationOptions) =>
        this.core.deleteNamespacedPod(
          { name, namespace, ...(gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds }) },
          o,
        ),
    }[kind];
    for (const name of names) {
      await this.call(`delete ${kind} ${name}`, (o) => remove(name, o), { tolerate: [404] });
    }
  }

  /** `deletecollection` of a run's Secrets or ConfigMaps by label. */
  async deleteLabelled(
    kind: 'secrets' | 'configmaps',
    namespace: string,
    labelSelector: string,
  ): Promise<void> {
    await this.must<unknown>(`delete ${kind} by label`, (o) =>
      kind === 'secrets'
        ? this.core.deleteCollectionNamespacedSecret({ namespace, labelSelector }, o)
        : this.core.deleteCollectionNamespacedConfigMap({ namespace, labelSelector }, o),
    );
  }

  /**
   * The pod's complete lines after `position` (with `final`, also a last line
   * without a newline). `gone`: no such pod; `not-started`: its container has
   * no log yet (the API answers 400).
   */
  async readLog(
    h: PodRef,
    position: LogPosition,
    options: { readonly final: boolean },
  ): Promise<LogRead | 'gone' | 'not-started'> {
    const sinceTime = sinceTimeOf(position);
    const result = await this.call(
      `read log of pod ${h.pod}`,
      (o) =>
        this.core.readNamespacedPodLog(
          {
            name: h.pod,
            namespace: h.namespace,
            container: CONTAINER_NAME,
            timestamps: true,
            limitBytes: LOG_READ_BYTES,
          },
          o,
        ),
      { tolerate: [400, 404], query: sinceTime === undefined ? {} : { sinceTime } },
    );
    if (!result.ok) return result.status === 404 ? 'gone' : 'not-started';
    const text = typeof result.value === 'string' ? result.value : String(result.value ?? '');
    // The API may stop a little short of limitBytes; a line is at most 64 KiB (the shim cuts longer ones).
    const cut = Buffer.byteLength(text, 'utf8') >= LOG_READ_BYTES - 128 * 1024;
    const lines = parsePodLog(text, { final: options.final && !cut }).filter(newLineFilter(position));
    return { lines, cut };
  }

  /** `call`, where any answer but success is LauncherUnavailableError. */
  async must<T>(action: string, call: (options: ConfigurationOptions) => Promise<T>): Promise<T> {
    const result = await this.call(action, call);
    if (!result.ok) throw new LauncherUnavailableError(`Kubernetes ${action} answered ${result.status}`);
    return result.value;
  }

  /**
   * One API call with retries on throttling, 5xx and no answer, a timeout,
   * and extra query parameters the generated client lacks (`sinceTime`).
   * A status in `tolerate` is an answer, not an error; anything else becomes
   * a domain error naming `action` (and never a value in `secrets`).
   */
  async call<T>(
    action: string,
    call: (options: ConfigurationOptions) => Promise<T>,
    extra: {
      readonly tolerate?: readonly number[];
      readonly secrets?: readonly string[];
      readonly query?: Readonly<Record<string, string>>;
    } = {},
  ): Promise<CallResult<T>> {
    const timeoutMs = this.#o.requestTimeoutMs ?? 30_000;
    const query = extra.query ?? {};
    const options: ConfigurationOptions = {
      middleware: [
        {
          pre: (context: RequestContext) => {
            for (const [name, value] of Object.entries(query)) context.setQueryParam(name, value);
            context.setSignal(AbortSignal.timeout(timeoutMs));
            return new Observable(Promise.resolve(context));
          },
          post: (context: ResponseContext) => new Observable(Promise.resolve(context)),
        },
      ],
      middlewareMergeStrategy: 'append',
    };
    const tolerate = extra.tolerate ?? [];
    try {
      const value = await withRetry(() => call(options), {
        retryable: isTransient,
        retryAfterMs,
        ...(this.#o.retry?.attempts === undefined ? {} : { attempts: this.#o.retry.attempts }),
        ...(this.#o.retry?.baseMs === undefined ? {} : { baseMs: this.#o.retry.baseMs }),
        ...(this.#o.retry?.maxMs === undefined ? {} : { maxMs: this.#o.retry.maxMs }),
      });
      return { ok: true, value };
    } catch (error) {
      const status = statusOf(error);
      if (status !== undefined && tolerate.includes(status)) return { ok: false, status };
      throw kubeError(error, action, extra.secrets ?? []);
    }
  }
}
