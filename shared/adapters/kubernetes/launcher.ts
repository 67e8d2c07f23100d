import { LaunchRejectedError } from '../../domain/errors.ts';
import { isDnsLabel } from '../../domain/kubernetes-names.ts';
import type { Run } from '../../domain/run.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import type { BackendStatus, Launcher, LaunchRequest } from '../../ports/launcher.ts';
import type { LogPage } from '../../ports/log-store.ts';
import type { KubernetesLauncherOptions } from './config.ts';
import { PodFollowers } from './follower.ts';
import { type KubernetesHandle, parseKubernetesHandle, RUN_ID_ANNOTATION, runSelector } from './handle.ts';
import { KubeApi } from './kube-api.ts';
import { LogPages } from './log-pages.ts';
import { CONTAINER_NAME } from './manifests.ts';
import { PodArchiver } from './pod-archive.ts';
import { launchPod } from './pod-launch.ts';
import { describePod, hasEnded } from './pod-status.ts';
import { type CleanupDeps, collectOrphans, type OrphanReport, removeRun } from './run-cleanup.ts';

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
  readonly #api: KubeApi;
  readonly #clock: Clock;
  readonly #archiver: PodArchiver;
  readonly #pages: LogPages;
  readonly #followers: PodFollowers;

  constructor(options: KubernetesLauncherOptions) {
    if (!isDnsLabel(options.namespace)) {
      throw new RangeError(`Kubernetes namespace ${options.namespace} is not a DNS-1123 label`);
    }
    this.#o = options;
    this.#api = new KubeApi({
      kubeConfig: options.kubeConfig,
      ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
      ...(options.retry === undefined ? {} : { retry: options.retry }),
    });
    this.#clock = options.clock ?? systemClock;
    this.#archiver = new PodArchiver({ api: this.#api, archive: options.archive, clock: this.#clock });
    this.#pages = new LogPages({
      api: this.#api,
      archiver: this.#archiver,
      clock: this.#clock,
      ...(options.pageLines === undefined ? {} : { pageLines: options.pageLines }),
    });
    this.#followers = new PodFollowers({
      api: this.#api,
      archiver: this.#archiver,
      ...(options.pollIntervalSeconds === undefined
        ? {}
        : { pollIntervalSeconds: options.pollIntervalSeconds }),
    });
  }

  launch({ run, image }: LaunchRequest): Promise<string> {
    return launchPod(this.#api, this.#o, run, image);
  }

  async status(handle: string, _run: Run): Promise<BackendStatus> {
    const h = this.#parse(handle);
    const pod = await this.#api.readPod(h.namespace, h.pod);
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

  /** See LogPages.read (log-pages.ts). */
  logs(handle: string, run: Run, cursor?: string, limit?: number): Promise<LogPage> {
    return this.#pages.read(this.#parse(handle), run, cursor, limit);
  }

  /**
   * Delete the pod with `graceSeconds` for the task to stop (SIGTERM, then
   * SIGKILL), after archiving its log so far. Gone already is success. The
   * Secret and ConfigMap stay until cleanup.
   */
  async cancel(handle: string, run: Run, graceSeconds: number): Promise<void> {
    const h = this.#parse(handle);
    const pod = await this.#api.readPod(h.namespace, h.pod);
    if (pod === undefined) return;
    // A follower keeps archiving until the stream ends, the lines of the grace period included.
    if (!this.#followers.has(h)) {
      await this.#archiver.archivePod(run.id, h, { final: hasEnded(pod) });
    }
    await this.#api.deleteEach('pod', h.namespace, [h.pod], Math.max(0, Math.floor(graceSeconds)));
  }

  /** Archive the log, then delete every Secret, ConfigMap and pod of the run. Idempotent. */
  async cleanup(handle: string, run: Run): Promise<void> {
    const h = this.#parse(handle);
    await this.#followers.stop(run.id);
    const listed = await this.#api.listPods(h.namespace, runSelector(run.id));
    const pods = listed.filter((p) => p.metadata?.annotations?.[RUN_ID_ANNOTATION] === run.id);
    if (!pods.some((p) => p.metadata?.name === h.pod)) {
      const own = await this.#api.readPod(h.namespace, h.pod);
      if (own !== undefined) pods.push(own);
    }
    await removeRun(this.#cleanupDeps(), run.id, h.namespace, { pods, names: [h.pod] }, h);
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
  collectOrphans(isActive: (runId: string) => Promise<boolean>): Promise<OrphanReport> {
    return collectOrphans(this.#cleanupDeps(), this.#o.namespace, isActive);
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
    return this.#followers.follow(run.id, this.#parse(handle), options.signal);
  }

  #cleanupDeps(): CleanupDeps {
    return {
      api: this.#api,
      archiver: this.#archiver,
      followers: this.#followers,
      graceSeconds: this.#o.cleanupGraceSeconds ?? 30,
    };
  }

  #parse(handle: string): KubernetesHandle {
    const h = parseKubernetesHandle(handle);
    if (h === undefined) throw new LaunchRejectedError(`Not a Kubernetes launch handle: ${handle}`);
    return h;
  }
}
