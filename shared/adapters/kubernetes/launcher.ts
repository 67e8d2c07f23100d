import { Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import {
  type ConfigurationOptions,
  CoreV1Api,
  KubeConfig,
  Log,
  Observable,
  type RequestContext,
  type ResponseContext,
  type V1Pod,
} from '@kubernetes/client-node';
import type { PreparedTask } from '../../app/task-prep.ts';
import type { Settings } from '../../config/settings.ts';
import { isEnvName } from '../../domain/env-name.ts';
import {
  LauncherUnavailableError,
  LaunchRejectedError,
  RunnerNotConfiguredError,
} from '../../domain/errors.ts';
import { isDnsLabel } from '../../domain/kubernetes-names.ts';
import type { Run } from '../../domain/run.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import type { BackendStatus, Launcher, LaunchRequest } from '../../ports/launcher.ts';
import {
  LOG_PAGE_DEFAULT_LINES,
  LOG_PAGE_MAX_LINES,
  type LogLineInput,
  type LogPage,
  type LogStore,
  logPageSize,
} from '../../ports/log-store.ts';
import { withRetry } from '../retry.ts';
import { isTransient, kubeError, retryAfterMs, statusOf } from './errors.ts';
import {
  attemptOf,
  configMapNameFor,
  formatKubernetesHandle,
  type KubernetesHandle,
  MANAGED_SELECTOR,
  parseKubernetesHandle,
  podNameFor,
  RUN_ID_ANNOTATION,
  type RunAttempt,
  runSelector,
  secretNameFor,
} from './handle.ts';
import { appendAll, markerText, scanArchive } from './log-archive.ts';
import {
  CONTAINER_NAME,
  configMapManifest,
  ownerReferenceTo,
  podManifest,
  secretManifest,
} from './manifests.ts';
import {
  advance,
  decodeLogCursor,
  encodeLogCursor,
  type LogPosition,
  newLineFilter,
  type PodLogLine,
  parsePodLog,
  START,
  sinceTimeOf,
  streamOf,
  utcTimestamp,
} from './pod-log.ts';
import { describePod } from './pod-status.ts';

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
/** Consecutive failed follow streams before `follow` gives up. */
const FOLLOW_FAILURES_MAX = 5;

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

export interface OrphanReport {
  /** Runs whose objects were archived and deleted. */
  readonly collected: readonly string[];
  /** Runs still active: left alone. */
  readonly kept: readonly string[];
  /** Managed objects without a run id annotation: left alone, named here. */
  readonly unidentified: readonly string[];
}

type CallResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly status: number };

interface LogRead {
  readonly lines: readonly PodLogLine[];
  /** The read stopped at LOG_READ_BYTES: more may follow. */
  readonly cut: boolean;
}

/**
 * The `kubernetes` runner: one pod per run and attempt, in one namespace.
 *
 * Launch. The pod is created first, then its Secret (secret environment) and
 * ConfigMap (task spec), each with an ownerReference to the pod: every Secret
 * has its owner from birth, so the cluster's garbage collector removes it
 * should anyone else delete the pod, and the launcher needs no `patch` right.
 * The pod cannot start before both exist (`envFrom` and the volume are not
 * optional; the kubelet retries until they appear, usually before it has even
 * seen the pod). A create answered 409 adopts the pod: a redelivery of a pod
 * that has not started yet re-creates whatever of the Secret and ConfigMap is
 * missing, a pod that started or ended is returned as it is. A pod whose log
 * is in the archive existed and was cleaned up: a late duplicate gets its
 * handle back and nothing is created.
 *
 * Logs. While the pod exists, `logs` reads its log from the API from a
 * position in it (see pod-log.ts), so lines show up while it runs. `cancel`
 * and `cleanup` first copy every line not yet archived into `archive`
 * (see log-archive.ts); afterwards `logs` reads the archive, and a cursor
 * handed out while the pod was live continues there. `follow` streams the log
 * into the archive as it is written.
 *
 * Cleanup deletes the run's Secrets, ConfigMaps and pods, by name and by
 * label selector (other attempts, a half-created set), pods last so that an
 * interrupted cleanup leaves something `collectOrphans` can find.
 *
 * The API client retries nothing: every call goes through `withRetry` on 429
 * (honouring `Retry-After`), 5xx and no answer; what still fails is
 * LauncherUnavailableError. Archiving is serialised per pod within this
 * process; two processes archiving the same pod at the same moment could
 * append a line twice.
 *
 * @example
 * const k8s = kubernetesSettingsFrom(settings, process.env);
 * const launcher = new KubernetesLauncher({
 *   kubeConfig: loadKubeConfig(k8s.kubeconfig), namespace: k8s.namespace,
 *   serviceAccountName: k8s.serviceAccountName, imagePullSecrets: k8s.imagePullSecrets,
 *   cleanupGraceSeconds: k8s.cleanupGraceSeconds, pollIntervalSeconds: k8s.pollIntervalSeconds,
 *   prepare: (run) => prepareTask({ store, assets, secrets }, run), archive: logStore,
 * });
 * await launcher.collectOrphans(async (runId) => !isTerminal((await store.getRun(runId))?.state ?? 'failed'));
 * const handle = await launcher.launch({ run, image: 'chrweav/ansible-cloud' }); // 'kubernetes:remote-worker/rw-…#a1'
 */
export class KubernetesLauncher implements Launcher {
  readonly backend = 'kubernetes' as const;
  readonly #o: KubernetesLauncherOptions;
  readonly #core: CoreV1Api;
  readonly #log: Log;
  readonly #clock: Clock;
  /** Per pod (`<ns>/<pod>`): the tail of the queue of archive writers. */
  readonly #locks = new Map<string, Promise<void>>();
  /** Per pod: the `follow` streaming it into the archive. */
  readonly #follows = new Map<
    string,
    {
      readonly runId: string;
      readonly controller: AbortController;
      readonly done: Promise<{ archived: number }>;
      /** `done` with its failure swallowed: what cleanup waits for. */
      readonly settled: Promise<unknown>;
    }
  >();

  constructor(options: KubernetesLauncherOptions) {
    if (!isDnsLabel(options.namespace)) {
      throw new RangeError(`Kubernetes namespace ${options.namespace} is not a DNS-1123 label`);
    }
    this.#o = options;
    this.#core = options.kubeConfig.makeApiClient(CoreV1Api);
    this.#log = new Log(options.kubeConfig);
    this.#clock = options.clock ?? systemClock;
  }

  async launch({ run, image }: LaunchRequest): Promise<string> {
    const key: RunAttempt = { runId: run.id, attempt: run.attempt };
    const namespace = this.#o.namespace;
    let name: string;
    try {
      name = podNameFor(key);
    } catch (error) {
      throw new LaunchRejectedError(`Run ${run.id} cannot be named as a Kubernetes pod: ${error}`);
    }
    if (image.trim() === '')
      throw new LaunchRejectedError('No runner image to start the Kubernetes pod with');
    const handle = formatKubernetesHandle({ namespace, pod: name, attempt: run.attempt });

    // The pod ran and was cleaned up: its log is archived. Never create it a second time.
    if ((await scanArchive(this.#o.archive, run.id, markerText(namespace, name, run.attempt))).found) {
      return handle;
    }

    const prepared = await this.#o.prepare(run);
    const bad = Object.keys(prepared.secretEnv).filter((env) => !isEnvName(env));
    if (bad.length > 0) {
      throw new LaunchRejectedError(
        `Secret environment names are not valid variable names: ${bad.join(', ')}`,
      );
    }
    const hasSecretEnv = Object.keys(prepared.secretEnv).length > 0;
    const body = podManifest({
      key,
      name,
      namespace,
      image,
      serviceAccountName: this.#o.serviceAccountName,
      imagePullSecrets: this.#o.imagePullSecrets ?? [],
      activeDeadlineSeconds: run.timeoutSeconds + (this.#o.deadlineMarginSeconds ?? 300),
      terminationGracePeriodSeconds: this.#o.cleanupGraceSeconds ?? 30,
      runAsUser: this.#o.runAsUser ?? 10001,
      hasSecretEnv,
    });

    const created = await this.#call(
      `create pod ${name}`,
      (options) => this.#core.createNamespacedPod({ namespace, body }, options),
      { tolerate: [409] },
    );
    let pod: V1Pod;
    if (created.ok) {
      pod = created.value;
    } else {
      // 409: an earlier delivery of this attempt created it. Adopt it, never a second one.
      const existing = await this.#readPod(namespace, name);
      if (existing === undefined) {
        throw new LauncherUnavailableError(
          `Kubernetes pod ${name} existed a moment ago and is gone now (being deleted?); will look again`,
        );
      }
      pod = existing;
      if (hasStarted(pod)) return handle;
    }

    try {
      await this.#createSupport(key, name, pod, prepared, hasSecretEnv);
    } catch (error) {
      if (error instanceof LaunchRejectedError) {
        // Refused for good: the pod would wait forever for what it mounts. Remove it (no log yet).
        await this.#call(
          `delete pod ${name}`,
          (options) => this.#core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 }, options),
          { tolerate: [404] },
        ).catch(() => {});
      }
      throw error;
    }
    return handle;
  }

  async status(handle: string, _run: Run): Promise<BackendStatus> {
    const h = this.#parse(handle);
    const pod = await this.#readPod(h.namespace, h.pod);
    if (pod === undefined) {
      return {
        state: 'missing',
        reason: `Kubernetes has no pod ${h.namespace}/${h.pod} (it was deleted, or never created)`,
      };
    }
    return describePod(pod, {
      container: CONTAINER_NAME,
      nowMs: this.#clock.nowMs(),
      stuckAfterSeconds: this.#o.stuckAfterSeconds ?? 120,
    });
  }

  /**
   * Lines after `cursor`: from the pod's log while the pod exists, from the
   * archive once it is gone. A cursor of the pod's log goes on in the
   * archive at the same line; a cursor of an earlier attempt's pod goes on in
   * the archive after that pod's lines (or, if that pod was never archived,
   * at the start of the current pod). Without a cursor: the current pod's log
   * while it runs (an earlier attempt's lines are in the archive), the whole
   * archive once it is gone.
   */
  async logs(handle: string, run: Run, cursor?: string, limit?: number): Promise<LogPage> {
    const h = this.#parse(handle);
    const size = Math.min(
      logPageSize(limit) ?? LOG_PAGE_DEFAULT_LINES,
      this.#o.pageLines ?? LOG_PAGE_MAX_LINES,
    );
    const at = cursor === undefined ? undefined : decodeLogCursor(cursor);
    if (at?.kind === 'archive') return this.#archivePage(run.id, at.cursor, size);

    if (at !== undefined && at.attempt !== h.attempt) {
      const earlier = podNameFor({ runId: run.id, attempt: at.attempt });
      const page = await this.#archiveAfter(run.id, h.namespace, earlier, at.attempt, at.position, size);
      if (page !== undefined) return page;
    }
    const position = at !== undefined && at.attempt === h.attempt ? at.position : START;
    const live = await this.#livePage(h, position, size);
    if (live !== undefined) return live;
    // The pod is gone. From the start: the whole archive, every attempt behind its marker.
    if (at === undefined) return this.#archivePage(run.id, undefined, size);
    const archived = await this.#archiveAfter(run.id, h.namespace, h.pod, h.attempt, position, size);
    if (archived !== undefined) return archived;
    // Gone without a trace in the archive: nothing more will come from this pod.
    return { lines: [], nextCursor: encodeLogCursor({ kind: 'pod', attempt: h.attempt, position }) };
  }

  /**
   * Delete the pod with `graceSeconds` for the task to stop (SIGTERM, then
   * SIGKILL), after archiving its log so far. Gone already is success. The
   * Secret and ConfigMap stay until cleanup.
   */
  async cancel(handle: string, run: Run, graceSeconds: number): Promise<void> {
    const h = this.#parse(handle);
    const pod = await this.#readPod(h.namespace, h.pod);
    if (pod === undefined) return;
    // A follower keeps archiving until the stream ends, the lines of the grace period included.
    if (!this.#follows.has(podKey(h))) {
      await this.#archivePod(run.id, h, { final: hasEnded(pod) });
    }
    await this.#call(
      `delete pod ${h.pod}`,
      (options) =>
        this.#core.deleteNamespacedPod(
          { name: h.pod, namespace: h.namespace, gracePeriodSeconds: Math.max(0, Math.floor(graceSeconds)) },
          options,
        ),
      { tolerate: [404] },
    );
  }

  /** Archive the log, then delete every Secret, ConfigMap and pod of the run. Idempotent. */
  async cleanup(handle: string, run: Run): Promise<void> {
    const h = this.#parse(handle);
    await this.#stopFollowing(run.id);
    const listed = await this.#listPods(h.namespace, runSelector(run.id));
    const pods = listed.filter((p) => p.metadata?.annotations?.[RUN_ID_ANNOTATION] === run.id);
    if (!pods.some((p) => p.metadata?.name === h.pod)) {
      const own = await this.#readPod(h.namespace, h.pod);
      if (own !== undefined) pods.push(own);
    }
    await this.#removeRun(run.id, h.namespace, pods, [h.pod], h);
  }

  /**
   * On start-up: find every object this control plane manages in the
   * namespace and remove those whose run is no longer active (terminal, or
   * unknown to `isActive`), archiving pod logs first. Objects are found by
   * the managed-by label on pods and ConfigMaps; a run's Secret is removed
   * with them (by name and label). A Secret whose pod and ConfigMap are both
   * gone can only have lost them to someone else's delete, and then the
   * cluster's garbage collector removes it through its ownerReference.
   *
   * @example
   * const report = await launcher.collectOrphans(async (id) => {
   *   const run = await store.getRun(id);
   *   return run !== undefined && !isTerminal(run.state);
   * });
   */
  async collectOrphans(isActive: (runId: string) => Promise<boolean>): Promise<OrphanReport> {
    const namespace = this.#o.namespace;
    const pods = await this.#listPods(namespace, MANAGED_SELECTOR);
    const configMaps = await this.#must('list configmaps', (options) =>
      this.#core.listNamespacedConfigMap({ namespace, labelSelector: MANAGED_SELECTOR }, options),
    );
    const byRun = new Map<string, { pods: V1Pod[]; names: Set<string> }>();
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
    for (const pod of pods)
      add('pod', pod.metadata?.name, pod.metadata?.annotations?.[RUN_ID_ANNOTATION], pod);
    for (const cm of configMaps.items) {
      add('configmap', cm.metadata?.name, cm.metadata?.annotations?.[RUN_ID_ANNOTATION]);
    }

    const collected: string[] = [];
    const kept: string[] = [];
    for (const [runId, entry] of [...byRun].sort(([a], [b]) => a.localeCompare(b))) {
      if (await isActive(runId)) {
        kept.push(runId);
        continue;
      }
      await this.#stopFollowing(runId);
      await this.#removeRun(runId, namespace, entry.pods, [...entry.names]);
      collected.push(runId);
    }
    return { collected, kept, unidentified };
  }

  /**
   * Stream the pod's log into the archive as it is written, until the
   * container has ended (then the last lines are archived too) or `signal`
   * aborts. Waits while the container has not started. `cleanup` stops a
   * follower and archives the rest itself; `cancel` leaves it running so the
   * lines of the grace period are kept. Uses the client's `Log` (`follow=true`);
   * a stream the API server closes early is opened again where it stopped.
   *
   * @example
   * const following = launcher.follow(handle, run); // runs beside the poller
   * // … the pod ends …
   * const { archived } = await following;
   */
  follow(
    handle: string,
    run: Run,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<{ archived: number }> {
    const h = this.#parse(handle);
    const key = podKey(h);
    const existing = this.#follows.get(key);
    if (existing !== undefined) return existing.done;
    const controller = new AbortController();
    if (options.signal?.aborted === true) controller.abort();
    options.signal?.addEventListener('abort', () => controller.abort(), { once: true });
    const done = this.#followLoop(run.id, h, controller.signal).finally(() => this.#follows.delete(key));
    this.#follows.set(key, { runId: run.id, controller, done, settled: done.catch(() => undefined) });
    return done;
  }

  // ---- launch helpers -------------------------------------------------------

  async #createSupport(
    key: RunAttempt,
    pod: string,
    owner: V1Pod,
    prepared: PreparedTask,
    hasSecretEnv: boolean,
  ): Promise<void> {
    const namespace = this.#o.namespace;
    const owners = ownerReferenceTo(owner);
    if (hasSecretEnv) {
      const body = secretManifest({ key, pod, namespace, env: prepared.secretEnv, owners });
      // The answer to a refused Secret may quote it: keep values out of the message, drop the cause.
      await this.#call(
        `create secret ${secretNameFor(pod)}`,
        (options) => this.#core.createNamespacedSecret({ namespace, body }, options),
        { tolerate: [409], secrets: Object.values(prepared.secretEnv) },
      );
    }
    const configMap = configMapManifest({ key, pod, namespace, spec: prepared.spec, owners });
    await this.#call(
      `create configmap ${configMapNameFor(pod)}`,
      (options) => this.#core.createNamespacedConfigMap({ namespace, body: configMap }, options),
      { tolerate: [409] },
    );
  }

  // ---- cleanup helpers ------------------------------------------------------

  /**
   * Archive each pod's log (earliest attempt first), then delete Secrets,
   * ConfigMaps and pods by name and by the run's label selector.
   */
  async #removeRun(
    runId: string,
    namespace: string,
    pods: readonly V1Pod[],
    names: readonly string[],
    handle?: KubernetesHandle,
  ): Promise<void> {
    const ordered = [...pods].sort(
      (a, b) => (attemptOf(a.metadata?.labels) ?? 0) - (attemptOf(b.metadata?.labels) ?? 0),
    );
    for (const pod of ordered) {
      const name = pod.metadata?.name;
      if (name === undefined) continue;
      const attempt = name === handle?.pod ? handle.attempt : attemptOf(pod.metadata?.labels);
      if (attempt === undefined) continue;
      await this.#archivePod(runId, { namespace, pod: name, attempt }, { final: hasEnded(pod) });
    }
    const podNames = [
      ...new Set([
        ...names,
        ...pods.flatMap((p) => (p.metadata?.name === undefined ? [] : [p.metadata.name])),
      ]),
    ];
    const selector = runSelector(runId);
    const grace = this.#o.cleanupGraceSeconds ?? 30;

    for (const pod of podNames) {
      const name = secretNameFor(pod);
      await this.#call(
        `delete secret ${name}`,
        (o) => this.#core.deleteNamespacedSecret({ name, namespace }, o),
        {
          tolerate: [404],
        },
      );
    }
    await this.#must('delete secrets by label', (o) =>
      this.#core.deleteCollectionNamespacedSecret({ namespace, labelSelector: selector }, o),
    );
    for (const pod of podNames) {
      const name = configMapNameFor(pod);
      await this.#call(
        `delete configmap ${name}`,
        (o) => this.#core.deleteNamespacedConfigMap({ name, namespace }, o),
        { tolerate: [404] },
      );
    }
    await this.#must('delete configmaps by label', (o) =>
      this.#core.deleteCollectionNamespacedConfigMap({ namespace, labelSelector: selector }, o),
    );
    for (const name of podNames) {
      await this.#call(
        `delete pod ${name}`,
        (o) => this.#core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: grace }, o),
        { tolerate: [404] },
      );
    }
  }

  async #stopFollowing(runId: string): Promise<void> {
    for (const follow of [...this.#follows.values()].filter((f) => f.runId === runId)) {
      follow.controller.abort();
      await follow.settled;
    }
  }

  // ---- logs -----------------------------------------------------------------

  /** One page of the pod's log after `position`; undefined when the pod is gone. */
  async #livePage(h: KubernetesHandle, position: LogPosition, size: number): Promise<LogPage | undefined> {
    const read = await this.#readLog(h, position, { final: false });
    if (read === 'gone') return undefined;
    const lines = read === 'not-started' ? [] : read.lines.slice(0, size);
    const next = advance(position, lines);
    return {
      lines: lines.map((line, i) => ({
        seq: position.n + i + 1,
        at: utcTimestamp(line.ts) ?? this.#clock.now(),
        stream: streamOf(line.text),
        text: line.text,
      })),
      nextCursor: encodeLogCursor({ kind: 'pod', attempt: h.attempt, position: next }),
    };
  }

  async #archivePage(runId: string, cursor: string | undefined, limit: number): Promise<LogPage> {
    const page = await this.#o.archive.read(runId, cursor === undefined ? { limit } : { cursor, limit });
    return { lines: page.lines, nextCursor: encodeLogCursor({ kind: 'archive', cursor: page.nextCursor }) };
  }

  /** The archive page after `position` of this pod's log; undefined when the pod's log is not in the archive. */
  async #archiveAfter(
    runId: string,
    namespace: string,
    pod: string,
    attempt: number,
    position: LogPosition,
    limit: number,
  ): Promise<LogPage | undefined> {
    const scan = await scanArchive(this.#o.archive, runId, markerText(namespace, pod, attempt), position);
    if (!scan.found || scan.resume === undefined) return undefined;
    return this.#archivePage(runId, scan.resume.cursor, limit);
  }

  /**
   * The pod's complete lines after `position` (with `final`, also a last line
   * without a newline). `gone`: no such pod; `not-started`: its container has
   * no log yet (the API answers 400).
   */
  async #readLog(
    h: { readonly namespace: string; readonly pod: string },
    position: LogPosition,
    options: { readonly final: boolean },
  ): Promise<LogRead | 'gone' | 'not-started'> {
    const sinceTime = sinceTimeOf(position);
    const result = await this.#call(
      `read log of pod ${h.pod}`,
      (o) =>
        this.#core.readNamespacedPodLog(
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

  /**
   * Copy what the archive lacks of this pod's log into it, opening with the
   * pod's marker. Serialised per pod within this process.
   */
  async #archivePod(
    runId: string,
    h: KubernetesHandle,
    options: { readonly final: boolean },
  ): Promise<number> {
    return this.#exclusive(podKey(h), async () => {
      const marker = markerText(h.namespace, h.pod, h.attempt);
      const scan = await scanArchive(this.#o.archive, runId, marker);
      if (!scan.found) {
        await this.#o.archive.append(runId, [{ stream: 'system', text: marker, at: this.#clock.now() }]);
      }
      return this.#archiveFrom(runId, h, scan.position, options);
    });
  }

  /** Append the pod's lines after `position`; the caller holds the pod's lock. */
  async #archiveFrom(
    runId: string,
    h: KubernetesHandle,
    from: LogPosition,
    options: { readonly final: boolean },
  ): Promise<number> {
    let position = from;
    let count = 0;
    for (;;) {
      const read = await this.#readLog(h, position, options);
      if (read === 'gone' || read === 'not-started' || read.lines.length === 0) return count;
      await appendAll(this.#o.archive, runId, read.lines.map(toLogLine));
      position = advance(position, read.lines);
      count += read.lines.length;
      if (!read.cut) return count;
    }
  }

  // ---- follow ---------------------------------------------------------------

  async #followLoop(runId: string, h: KubernetesHandle, signal: AbortSignal): Promise<{ archived: number }> {
    const key = podKey(h);
    const pollMs = (this.#o.pollIntervalSeconds ?? 3) * 1000;
    let position = await this.#exclusive(key, async () => {
      const marker = markerText(h.namespace, h.pod, h.attempt);
      const scan = await scanArchive(this.#o.archive, runId, marker);
      if (!scan.found) {
        await this.#o.archive.append(runId, [{ stream: 'system', text: marker, at: this.#clock.now() }]);
      }
      return scan.position;
    });
    let archived = 0;
    let failures = 0;
    while (!signal.aborted) {
      const pod = await this.#readPod(h.namespace, h.pod);
      if (pod === undefined) break;
      if (hasEnded(pod)) {
        archived += await this.#exclusive(key, () =>
          signal.aborted ? Promise.resolve(0) : this.#archiveFrom(runId, h, position, { final: true }),
        );
        break;
      }
      if (!hasStarted(pod)) {
        await sleep(pollMs, signal);
        continue;
      }
      try {
        const streamed = await this.#stream(runId, h, position, signal, pollMs);
        failures = 0;
        archived += streamed.count;
        position = streamed.position;
        // A stream that ended with nothing new: the container is ending; let its status catch up.
        if (streamed.count === 0) await sleep(pollMs, signal);
      } catch (error) {
        failures += 1;
        if (failures >= FOLLOW_FAILURES_MAX) throw kubeError(error, `follow the log of pod ${h.pod}`);
        await sleep(pollMs, signal);
      }
    }
    return { archived };
  }

  /**
   * One `follow=true` stream from `from`, appending complete new lines to the
   * archive as they arrive. Ends when the API server ends the stream, when
   * `signal` aborts, or when the pod has ended and the stream still has not
   * (a connection that died without closing).
   */
  async #stream(
    runId: string,
    h: KubernetesHandle,
    from: LogPosition,
    signal: AbortSignal,
    pollMs: number,
  ): Promise<{ position: LogPosition; count: number }> {
    const key = podKey(h);
    const isNew = newLineFilter(from);
    const decoder = new StringDecoder('utf8');
    let position = from;
    let count = 0;
    let pending = '';
    const sink = new Writable({
      write: (chunk: Buffer | string, _encoding, callback) => {
        pending += typeof chunk === 'string' ? chunk : decoder.write(chunk);
        const newline = pending.lastIndexOf('\n');
        if (newline < 0) return callback();
        const lines = parsePodLog(pending.slice(0, newline + 1), { final: false }).filter(isNew);
        pending = pending.slice(newline + 1);
        if (lines.length === 0) return callback();
        this.#exclusive(key, async () => {
          // Stopped (by cleanup): cleanup archives the rest itself, from what the archive holds.
          if (signal.aborted) return;
          await appendAll(this.#o.archive, runId, lines.map(toLogLine));
          position = advance(position, lines);
          count += lines.length;
        }).then(() => callback(), callback);
      },
    });

    const stop = new AbortController();
    const ended = new Promise<void>((resolve, reject) => {
      sink.on('finish', resolve);
      sink.on('error', reject);
      stop.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    // Awaited below; if the request fails first, a later sink error must not go unhandled.
    ended.catch(() => {});
    const onAbort = () => stop.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const sinceTime = sinceTimeOf(from);
    let request: AbortController | undefined;
    let watchdog: NodeJS.Timeout | undefined;
    try {
      request = await this.#log.log(h.namespace, h.pod, CONTAINER_NAME, sink, {
        follow: true,
        timestamps: true,
        ...(sinceTime === undefined ? {} : { sinceTime }),
      });
      let strikes = 0;
      watchdog = setInterval(() => {
        this.#readPod(h.namespace, h.pod).then(
          (pod) => {
            strikes = pod === undefined || hasEnded(pod) ? strikes + 1 : 0;
            if (strikes >= 2) stop.abort();
          },
          () => {},
        );
      }, pollMs);
      await ended;
      return { position, count };
    } finally {
      clearInterval(watchdog);
      signal.removeEventListener('abort', onAbort);
      request?.abort();
      // Wait for an append in flight, so the caller's position is final.
      await this.#exclusive(key, async () => {});
    }
  }

  // ---- API plumbing ---------------------------------------------------------

  #parse(handle: string): KubernetesHandle {
    const h = parseKubernetesHandle(handle);
    if (h === undefined) throw new LaunchRejectedError(`Not a Kubernetes launch handle: ${handle}`);
    return h;
  }

  async #readPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    const result = await this.#call(
      `read pod ${name}`,
      (o) => this.#core.readNamespacedPod({ name, namespace }, o),
      { tolerate: [404] },
    );
    return result.ok ? result.value : undefined;
  }

  async #listPods(namespace: string, labelSelector: string): Promise<V1Pod[]> {
    const list = await this.#must('list pods', (o) =>
      this.#core.listNamespacedPod({ namespace, labelSelector }, o),
    );
    return [...list.items];
  }

  async #must<T>(action: string, call: (options: ConfigurationOptions) => Promise<T>): Promise<T> {
    const result = await this.#call(action, call);
    if (!result.ok) throw new LauncherUnavailableError(`Kubernetes ${action} answered ${result.status}`);
    return result.value;
  }

  /**
   * One API call with retries on throttling, 5xx and no answer, a timeout,
   * and extra query parameters the generated client lacks (`sinceTime`).
   * A status in `tolerate` is an answer, not an error; anything else becomes
   * a domain error naming `action` (and never a value in `secrets`).
   */
  async #call<T>(
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

  async #exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#locks.get(key) ?? Promise.resolve();
    let release: () => void = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.#locks.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.#locks.get(key) === tail) this.#locks.delete(key);
    }
  }
}

const podKey = (h: { readonly namespace: string; readonly pod: string }): string => `${h.namespace}/${h.pod}`;

/** An archive line keeps the kubelet's instant (in UTC, nanoseconds included) as `at`: see log-archive.ts. */
const toLogLine = (line: PodLogLine): LogLineInput => {
  const at = utcTimestamp(line.ts);
  return { stream: streamOf(line.text), text: line.text, ...(at === undefined ? {} : { at }) };
};

/** The container has run or is running: its Secret and ConfigMap were there. */
function hasStarted(pod: V1Pod): boolean {
  if (hasEnded(pod)) return true;
  const state = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER_NAME)?.state;
  return state?.running !== undefined || state?.terminated !== undefined;
}

const hasEnded = (pod: V1Pod): boolean => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
