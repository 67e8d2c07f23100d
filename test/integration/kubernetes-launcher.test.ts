import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { GcsAssetStore } from '../../shared/adapters/gcs/asset-store.ts';
import {
  type KubernetesLauncherOptions,
  kubernetesSettingsFrom,
  loadKubeConfig,
} from '../../shared/adapters/kubernetes/config.ts';
import {
  configMapNameFor,
  podNameFor,
  RUN_ID_ANNOTATION,
  runIdLabelValue,
  secretNameFor,
} from '../../shared/adapters/kubernetes/handle.ts';
import { KUBERNETES_RBAC_RULES } from '../../shared/adapters/kubernetes/kube-api.ts';
import { KubernetesLauncher } from '../../shared/adapters/kubernetes/launcher.ts';
import { parsePodLog, utcTimestamp } from '../../shared/adapters/kubernetes/pod-log.ts';
import { openDatabase, type SqliteDatabase } from '../../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../shared/adapters/sqlite/target-store.ts';
import { prepareTask } from '../../shared/app/task-prep.ts';
import { loadSettings } from '../../shared/config/settings.ts';
import {
  type DomainError,
  LauncherUnavailableError,
  LaunchRejectedError,
} from '../../shared/domain/errors.ts';
import { newRun, type Run, type SecretBinding, transition } from '../../shared/domain/run.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import { newId } from '../../shared/lib/ids.ts';
import type { PreparedTask } from '../../shared/ports/launcher.ts';
import type { LogPage } from '../../shared/ports/log-store.ts';
import { exampleAssets, gcsAssetStore, gcsSigner } from '../support/asset-stores.ts';
import { type FakeGcs, startFakeGcs } from '../support/fake-gcs.ts';
import { type FakeKubeApi, type RecordedKubeRequest, startFakeKubeApi } from '../support/fake-kube-api.ts';
import { runTaskOnLocalhost } from '../support/task-run.ts';
import { vmTarget } from '../unit/app/harness.ts';

/**
 * KubernetesLauncher with the real @kubernetes/client-node 1.4 against a
 * loopback HTTPS fake of the API (test/support/fake-kube-api.ts), trusted
 * through the kubeconfig's `certificate-authority-data`. Where the fake
 * differs from a real API server (tests must not rely on these):
 * - no scheduler, kubelet or controllers: a pod stays Pending until the test
 *   moves it (`setWaiting`, `start`, `finish`); `activeDeadlineSeconds`,
 *   `terminationGracePeriodSeconds` and image pulls have no effect, and
 *   DeadlineExceeded, OOMKilled or ImagePullBackOff happen only when a test
 *   says so;
 * - a delete removes the object at once (a real pod stays Terminating for
 *   its grace period and its log stays readable meanwhile); there is no
 *   garbage collector, so ownerReferences are stored but never acted on;
 * - no admission: no Pod Security, quotas, LimitRanges, defaulting
 *   (`imagePullPolicy`, `dnsPolicy` …) or service account checks; validation
 *   is limited to names, labels, Secret/ConfigMap keys, base64 and the 1 MiB
 *   size limit; the namespace must be the one the fake was started with;
 * - no resourceVersion semantics (no watch, no conflicts on update, no
 *   optimistic concurrency), no pagination of lists (`limit`/`continue`),
 *   equality-based label selectors only;
 * - the log is kept per pod, not per container or stream; `sinceTime` is cut
 *   to the second as the API does; there is no log rotation, and a line still
 *   being written is shown by a plain read as far as it goes while `follow`
 *   waits for its end;
 * - RBAC is not enforced: any request with the bearer token is allowed (the
 *   Role in examples/kubernetes-runner is checked against the recorded
 *   requests instead).
 */
describe('KubernetesLauncher against a fake Kubernetes API', () => {
  const SECRET_VALUE = 'hunter2-k8s-canary-9d41';
  const KUBECONFIG_VALUE = `apiVersion: v1\nkind: Config\nusers:\n- name: x\n  user:\n    token: kubeconfig-canary-77aa\n`;
  const IMAGE = 'chrweav/ansible-cloud';
  const NAMESPACE = 'remote-worker';

  let api: FakeKubeApi;
  /** Assets on the GCS fake: a pod, wherever its cluster runs, reads its asset through a V4 signed URL. */
  let gcs: FakeGcs;
  let assets: GcsAssetStore;
  let dir: string;
  let kubeconfigPath: string;
  let db: SqliteDatabase;
  let store: SqliteRunStore;
  let targets: SqliteTargetStore;
  let archive: SqliteLogStore;

  const settings = (env: Record<string, string> = {}) =>
    loadSettings({
      env: {
        KUBERNETES_KUBECONFIG: kubeconfigPath,
        KUBERNETES_PULL_SECRETS: 'registry-example',
        CLEANUP_GRACE_SECONDS: '25',
        ...env,
      },
    });

  /** Built the way the composition root builds it: settings → kubeconfig file → launcher. */
  const launcher = (overrides: Partial<KubernetesLauncherOptions> = {}) => {
    const k8s = kubernetesSettingsFrom(settings(), {});
    return new KubernetesLauncher({
      kubeConfig: loadKubeConfig(k8s.kubeconfig),
      namespace: k8s.namespace,
      serviceAccountName: k8s.serviceAccountName,
      imagePullSecrets: k8s.imagePullSecrets,
      cleanupGraceSeconds: k8s.cleanupGraceSeconds,
      pollIntervalSeconds: 0.05,
      prepare,
      archive,
      retry: { baseMs: 1, maxMs: 2000 },
      ...overrides,
    });
  };

  /** prepareTask as the dispatcher runs it, plus a token-prepared kubeconfig for k8s-flavoured runs. */
  const prepare = async (run: Run): Promise<PreparedTask> => {
    const prepared = await prepareTask(
      {
        store,
        targets,
        assets,
        secrets: { get: async () => SECRET_VALUE },
      },
      run,
    );
    return run.extraVars.withKubeconfig === true
      ? { ...prepared, secretEnv: { ...prepared.secretEnv, KUBECONFIG: KUBECONFIG_VALUE } }
      : prepared;
  };

  /** A run as the dispatcher hands it to a launcher: claimed, attempt 1. */
  const dispatchingRun = (
    input: {
      id?: string;
      secrets?: SecretBinding[];
      extraVars?: Record<string, unknown>;
      attempt?: number;
      timeoutSeconds?: number;
    } = {},
  ): Run => {
    const draft = newRun(
      {
        id: input.id ?? newId(),
        kind: 'vm',
        targetId: 'vm-1',
        asset: 'hello/site.yml',
        extraVars: input.extraVars ?? { greeting: 'hi' },
        secrets: input.secrets ?? [],
        requestedBy: 'alice',
        timeoutSeconds: input.timeoutSeconds ?? 600,
      },
      new Date().toISOString(),
    );
    return transition(draft, 'dispatching', new Date().toISOString(), {
      patch: { attempt: input.attempt ?? 1, owner: 'dispatcher:test', runner: 'kubernetes', image: IMAGE },
    });
  };

  const podOf = (run: Run) => podNameFor({ runId: run.id, attempt: run.attempt });
  const since = (mark: number) => api.requests.slice(mark);
  const creates = (requests: readonly RecordedKubeRequest[], resource: string) =>
    requests.filter((r) => r.method === 'POST' && r.path.endsWith(`/${resource}`));
  const objectsOf = (run: Run) => {
    const label = runIdLabelValue(run.id);
    return (['pods', 'secrets', 'configmaps'] as const).flatMap((kind) =>
      api
        .names(kind)
        .filter((name) => api.get(kind, name)?.metadata.labels?.['remote-worker/run-id'] === label)
        .map((name) => `${kind}/${name}`),
    );
  };
  /** Read every page from `cursor` on. */
  const readAll = async (l: KubernetesLauncher, handle: string, run: Run, cursor?: string) => {
    const texts: string[] = [];
    let next = cursor;
    for (;;) {
      const page: LogPage = await l.logs(handle, run, next);
      texts.push(...page.lines.map((line) => line.text));
      if (page.lines.length === 0) return { texts, cursor: page.nextCursor };
      next = page.nextCursor;
    }
  };
  const waitFor = async (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000) => {
    const until = Date.now() + timeoutMs;
    while (!(await condition())) {
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const archived = async (runId: string) => (await archive.read(runId, { limit: 5000 })).lines;

  beforeAll(async () => {
    const signer = gcsSigner();
    gcs = await startFakeGcs({ signer: { clientEmail: signer.clientEmail, publicKey: signer.publicKey } });
    assets = gcsAssetStore(gcs, signer, 'rw-assets', exampleAssets('hello/site.yml'));
    api = await startFakeKubeApi({ namespace: NAMESPACE });
    dir = mkdtempSync(join(tmpdir(), 'rw-k8s-'));
    kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, api.kubeconfig(), { mode: 0o600 });
    db = openDatabase(':memory:');
    store = new SqliteRunStore({ db });
    targets = new SqliteTargetStore({ db });
    archive = new SqliteLogStore({ db });
    // An Azure VM over SSH brings its own key: no connection material beyond the run's own secrets.
    await targets.putTarget(vmTarget('vm-1', { cloud: 'azure', address: '10.1.2.3' }));
  });

  afterAll(async () => {
    db?.close();
    await api?.close();
    await gcs?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  describe('names', () => {
    it('makes deterministic DNS-1123 pod names and valid label values from any run id', () => {
      const ids = [newId(), 'run_with.odd+chars/and spaces', 'X'.repeat(200), '---', 'ÄÖÜ-ünïcode'];
      for (const runId of ids) {
        const name = podNameFor({ runId, attempt: 12 });
        expect(name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
        expect(name.length).toBeLessThanOrEqual(63);
        expect(podNameFor({ runId, attempt: 12 })).toBe(name);
        expect(podNameFor({ runId, attempt: 13 })).not.toBe(name);
        const label = runIdLabelValue(runId);
        expect(label).toMatch(/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/);
        expect(label.length).toBeLessThanOrEqual(63);
      }
      // Two ids that sanitise alike still get different pods and labels.
      expect(podNameFor({ runId: 'a_b', attempt: 1 })).not.toBe(podNameFor({ runId: 'a.b', attempt: 1 }));
      expect(runIdLabelValue('a b')).not.toBe(runIdLabelValue('a+b'));
      const ulid = newId();
      expect(runIdLabelValue(ulid)).toBe(ulid);
    });
  });

  describe('launch', () => {
    it('creates the pod, then its Secret and ConfigMap owned by it, with the security settings and labels', async () => {
      const run = dispatchingRun({
        secrets: [{ var: 'db_password', secret: 'db-admin' }],
        extraVars: { greeting: 'hello from Kubernetes', withKubeconfig: true },
        timeoutSeconds: 900,
      });
      const mark = api.requests.length;

      const handle = await launcher().launch({ run, image: IMAGE });

      const name = podOf(run);
      expect(handle).toBe(`kubernetes:${NAMESPACE}/${name}#a1`);
      expect(since(mark).map((r) => `${r.method} ${r.path.split('/').slice(5).join('/')}`)).toEqual([
        'POST pods',
        'POST secrets',
        'POST configmaps',
      ]);
      const pod = api.get('pods', name) as any;
      const secret = api.get('secrets', secretNameFor(name)) as any;
      const configMap = api.get('configmaps', configMapNameFor(name)) as any;
      const labels = {
        'app.kubernetes.io/managed-by': 'remote-worker',
        'remote-worker/run-id': run.id,
        'remote-worker/attempt': '1',
      };
      expect(pod.metadata.labels).toEqual({ ...labels, 'app.kubernetes.io/component': 'task' });
      expect(secret.metadata.labels).toEqual({ ...labels, 'app.kubernetes.io/component': 'task-env' });
      expect(configMap.metadata.labels).toEqual({ ...labels, 'app.kubernetes.io/component': 'task-spec' });
      for (const object of [pod, secret, configMap]) {
        expect(object.metadata.annotations).toEqual({ [RUN_ID_ANNOTATION]: run.id });
      }
      const owner = [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          name,
          uid: pod.metadata.uid,
          controller: false,
          blockOwnerDeletion: false,
        },
      ];
      expect(secret.metadata.ownerReferences).toEqual(owner);
      expect(configMap.metadata.ownerReferences).toEqual(owner);

      expect(pod.spec).toMatchObject({
        restartPolicy: 'Never',
        serviceAccountName: 'remote-worker-task',
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        imagePullSecrets: [{ name: 'registry-example' }],
        activeDeadlineSeconds: 900 + 300,
        terminationGracePeriodSeconds: 25,
        securityContext: { runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } },
        volumes: [{ name: 'task', configMap: { name: configMapNameFor(name) } }],
      });
      expect(pod.spec.containers).toHaveLength(1);
      expect(pod.spec.containers[0]).toMatchObject({
        name: 'runner',
        image: IMAGE,
        env: [
          { name: 'RW_RUN_ID', value: run.id },
          { name: 'RW_TASK_FILE', value: '/var/run/remote-worker/task/task.json' },
        ],
        envFrom: [{ secretRef: { name: secretNameFor(name) } }],
        volumeMounts: [{ name: 'task', mountPath: '/var/run/remote-worker/task', readOnly: true }],
        securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
      });

      expect(secret).toMatchObject({ type: 'Opaque', immutable: true });
      const decoded = Object.fromEntries(
        Object.entries(secret.data as Record<string, string>).map(([k, v]) => [
          k,
          Buffer.from(v, 'base64').toString(),
        ]),
      );
      expect(decoded).toEqual({ RW_SECRET_0: SECRET_VALUE, KUBECONFIG: KUBECONFIG_VALUE });

      const spec = JSON.parse(configMap.data['task.json']) as TaskSpec;
      expect(configMap.immutable).toBe(true);
      expect(spec).toMatchObject({
        runId: run.id,
        kind: 'vm',
        extraVars: { greeting: 'hello from Kubernetes' },
        secretVars: [{ var: 'db_password', env: 'RW_SECRET_0' }],
        inventory: { all: { hosts: { 'vm-1': { ansible_host: '10.1.2.3' } } } },
        timeoutSeconds: 900,
      });
      // The asset is a signed read URL for that one object, which the pod's task fetches and runs.
      const task = await runTaskOnLocalhost(spec);
      expect(task.code).toBe(0);
      expect(task.output).toContain('hello from Kubernetes from localhost');
    });

    it('sends secret values only in the Secret object, never in the pod, ConfigMap, labels or paths', async () => {
      const run = dispatchingRun({
        secrets: [{ var: 'db_password', secret: 'db-admin' }],
        extraVars: { withKubeconfig: true },
      });
      const mark = api.requests.length;
      const l = launcher();

      const handle = await l.launch({ run, image: IMAGE });
      await l.status(handle, run);
      await l.cancel(handle, run, 5);
      await l.cleanup(handle, run);

      const forms = [SECRET_VALUE, KUBECONFIG_VALUE, 'kubeconfig-canary-77aa'].flatMap((v) => [
        v,
        Buffer.from(v).toString('base64'),
      ]);
      const requests = since(mark);
      const secretCreates = creates(requests, 'secrets');
      expect(secretCreates).toHaveLength(1);
      for (const r of requests) {
        const where = `${r.path}?${new URLSearchParams(r.query)}`;
        for (const form of forms) expect(where).not.toContain(form);
        // The raw value never travels anywhere; the base64 form only inside the Secret's data.
        expect(r.body).not.toContain(SECRET_VALUE);
        expect(r.body).not.toContain('kubeconfig-canary-77aa');
        const body = r.body === '' ? {} : JSON.parse(r.body);
        if (secretCreates.includes(r)) delete body.data;
        for (const form of forms) expect(JSON.stringify(body)).not.toContain(form);
      }
      expect(secretCreates[0]?.body).toContain(Buffer.from(SECRET_VALUE).toString('base64'));
    });

    it('adopts its own pod on a second delivery: one pod, and a half-created set is completed', async () => {
      const run = dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] });
      const l = launcher();
      const first = await l.launch({ run, image: IMAGE });
      const name = podOf(run);
      const uid = api.get('pods', name)?.metadata.uid;
      // As if the first delivery had died before creating its ConfigMap.
      api.remove('configmaps', configMapNameFor(name));
      const mark = api.requests.length;

      const second = await l.launch({ run, image: IMAGE });

      expect(second).toBe(first);
      expect(api.get('pods', name)?.metadata.uid).toBe(uid);
      const requests = since(mark);
      expect(creates(requests, 'pods').map((r) => r.status)).toEqual([409]);
      expect(requests.some((r) => r.method === 'GET' && r.path.endsWith(`/pods/${name}`))).toBe(true);
      expect(creates(requests, 'secrets').map((r) => r.status)).toEqual([409]);
      expect(creates(requests, 'configmaps').map((r) => r.status)).toEqual([201]);
      expect(objectsOf(run)).toHaveLength(3);

      // Once the container runs, a redelivery touches nothing but the pod.
      api.start(name);
      const later = api.requests.length;
      expect(await l.launch({ run, image: IMAGE })).toBe(first);
      expect(since(later).map((r) => `${r.method} ${r.status}`)).toEqual(['POST 409', 'GET 200']);
    });

    it('never starts an attempt again once its pod ended, nor after cleanup deleted it', async () => {
      const run = dispatchingRun();
      const l = launcher();
      const handle = await l.launch({ run, image: IMAGE });
      const name = podOf(run);
      api.start(name);
      api.appendLog(name, ['done']);
      api.finish(name, { exitCode: 0 });

      const mark = api.requests.length;
      expect(await l.launch({ run, image: IMAGE })).toBe(handle);
      expect(creates(since(mark), 'pods').map((r) => r.status)).toEqual([409]);

      await l.cleanup(handle, run);
      expect(objectsOf(run)).toEqual([]);
      const afterCleanup = api.requests.length;
      // A duplicate delivered after cleanup: the archived log shows the pod existed.
      expect(await l.launch({ run, image: IMAGE })).toBe(handle);
      expect(creates(since(afterCleanup), 'pods')).toEqual([]);
      expect(objectsOf(run)).toEqual([]);
      expect(await l.status(handle, run)).toMatchObject({ state: 'missing' });
    });

    it('starts a new pod for a new attempt', async () => {
      const run = dispatchingRun();
      const l = launcher();
      const first = await l.launch({ run, image: IMAGE });

      const next = await l.launch({ run: { ...run, attempt: 2 }, image: IMAGE });

      expect(next).not.toBe(first);
      expect(next).toMatch(/#a2$/);
      expect(api.get('pods', podNameFor({ runId: run.id, attempt: 2 }))?.metadata.labels).toMatchObject({
        'remote-worker/attempt': '2',
      });
    });

    it('refuses for good what the API refuses, and removes the pod when its Secret is refused', async () => {
      const missingNamespace = launcher({ namespace: 'no-such-namespace' });
      await expect(missingNamespace.launch({ run: dispatchingRun(), image: IMAGE })).rejects.toThrow(
        /^Kubernetes create pod rw-[a-z0-9-]+ was refused \(404 NotFound: namespaces "no-such-namespace" not found\)$/,
      );

      const run = dispatchingRun({
        secrets: [{ var: 'db_password', secret: 'db-admin' }],
        extraVars: { withKubeconfig: true },
      });
      // A validation error that quotes the request, as some admission webhooks do.
      api.fail({ method: 'POST', path: /\/secrets$/, status: 422, echoBody: true });
      let error: unknown;
      try {
        await launcher().launch({ run, image: IMAGE });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(LaunchRejectedError);
      const text = `${(error as Error).message} ${String((error as Error).stack)} ${JSON.stringify(error)}`;
      expect(text).toContain('create secret');
      expect(text).not.toContain(SECRET_VALUE);
      expect(text).not.toContain(Buffer.from(SECRET_VALUE).toString('base64'));
      expect(text).not.toContain('kubeconfig-canary-77aa');
      expect(text).not.toContain(Buffer.from(KUBECONFIG_VALUE).toString('base64'));
      expect((error as Error).cause).toBeUndefined();
      expect(objectsOf(run)).toEqual([]);
    });

    it('answers a wrong token with a refusal naming Unauthorized', async () => {
      const badPath = join(dir, 'bad-kubeconfig');
      writeFileSync(badPath, api.kubeconfig({ token: 'wrong' }));
      const l = launcher({ kubeConfig: loadKubeConfig({ kind: 'file', path: badPath }) });
      await expect(l.status(`kubernetes:${NAMESPACE}/rw-x-1-abc#a1`, dispatchingRun())).rejects.toThrow(
        'Kubernetes read pod rw-x-1-abc was refused (401 Unauthorized)',
      );
    });
  });

  describe('status', () => {
    it('follows the pod from pending to running to a clean exit', async () => {
      const run = dispatchingRun();
      const l = launcher();
      const handle = await l.launch({ run, image: IMAGE });
      const name = podOf(run);

      expect(await l.status(handle, run)).toEqual({ state: 'pending' });
      api.setWaiting(name, 'ContainerCreating');
      expect(await l.status(handle, run)).toEqual({ state: 'pending' });
      api.start(name);
      expect(await l.status(handle, run)).toEqual({ state: 'running' });
      api.finish(name, { exitCode: 0 });
      expect(await l.status(handle, run)).toEqual({ state: 'exited', exitCode: 0 });
    });

    it('reports a failed exit with its code and reason: Error, OOMKilled, DeadlineExceeded', async () => {
      const l = launcher();
      const outcomes = [
        [
          { exitCode: 2 },
          { state: 'exited', exitCode: 2, reason: 'the runner container exited with code 2' },
        ],
        [
          { exitCode: 124 },
          {
            state: 'exited',
            exitCode: 124,
            reason: 'the runner container exited with code 124 (the run hit its timeout inside the task)',
          },
        ],
        [
          { exitCode: 137, reason: 'OOMKilled' },
          {
            state: 'exited',
            exitCode: 137,
            reason:
              'out of memory (OOMKilled): the runner container exited with code 137 (killed by SIGKILL)',
          },
        ],
        [
          {
            exitCode: 143,
            podReason: 'DeadlineExceeded',
            podMessage: 'Pod was active on the node longer than the specified deadline',
          },
          {
            state: 'exited',
            exitCode: 143,
            reason:
              'the pod ran past its deadline (activeDeadlineSeconds) and was stopped (DeadlineExceeded); the runner container exited with code 143 (terminated by SIGTERM)',
          },
        ],
        [
          { podReason: 'DeadlineExceeded' },
          {
            state: 'exited',
            reason:
              'the pod ran past its deadline (activeDeadlineSeconds) and was stopped (DeadlineExceeded)',
          },
        ],
      ] as const;
      for (const [outcome, expected] of outcomes) {
        const run = dispatchingRun();
        const handle = await l.launch({ run, image: IMAGE });
        api.start(podOf(run));
        api.finish(podOf(run), outcome);
        expect(await l.status(handle, run)).toEqual(expected);
      }
    });

    it('fails a container that cannot start only once the failure persists, and a bad image name at once', async () => {
      // The pod's start is a whole second, as Kubernetes writes it, and the launcher's clock counts from it: an
      // offset is exactly the time since the start (with the real clock, the second cut off the start and a
      // slow machine could take 119 s past 120).
      const startTime = `${new Date().toISOString().slice(0, 19)}Z`;
      let offsetMs = 0;
      const clock = {
        now: () => new Date(Date.parse(startTime) + offsetMs).toISOString(),
        nowMs: () => Date.parse(startTime) + offsetMs,
      };
      const l = launcher({ clock, stuckAfterSeconds: 120 });
      const run = dispatchingRun();
      const handle = await l.launch({ run, image: IMAGE });
      api.setWaiting(podOf(run), 'ImagePullBackOff', {
        message: 'Back-off pulling image "registry.example.com/nope:1"',
        startTime,
      });

      expect(await l.status(handle, run)).toEqual({ state: 'pending' });
      offsetMs = 119_000;
      expect(await l.status(handle, run)).toEqual({ state: 'pending' });
      offsetMs = 125_000;
      expect(await l.status(handle, run)).toEqual({
        state: 'exited',
        reason: expect.stringMatching(
          /^the image could not be pulled \(ImagePullBackOff, still failing 125 s after the pod started\): Back-off pulling image "registry.example.com\/nope:1"$/,
        ),
      });

      const bad = dispatchingRun();
      const badHandle = await l.launch({ run: bad, image: IMAGE });
      api.setWaiting(podOf(bad), 'InvalidImageName', { message: 'couldn\'t parse image name "UPPER"' });
      offsetMs = 0;
      expect(await l.status(badHandle, bad)).toMatchObject({
        state: 'exited',
        reason: expect.stringContaining('the image name is not valid (InvalidImageName)'),
      });
    });

    it('reports a pod the API does not know as missing', async () => {
      const run = dispatchingRun();
      expect(await launcher().status(`kubernetes:${NAMESPACE}/rw-gone-1-0123456789#a1`, run)).toEqual({
        state: 'missing',
        reason: `Kubernetes has no pod ${NAMESPACE}/rw-gone-1-0123456789 (it was deleted, or never created)`,
      });
    });
  });

  describe('logs', () => {
    it('shows lines while the pod runs, from a cursor, with no duplicates or gaps', async () => {
      const run = dispatchingRun();
      const l = launcher();
      const handle = await l.launch({ run, image: IMAGE });
      const name = podOf(run);

      // Not started: nothing yet, and the cursor does not move.
      const empty = await l.logs(handle, run);
      expect(empty.lines).toEqual([]);
      expect((await l.logs(handle, run, empty.nextCursor)).nextCursor).toBe(empty.nextCursor);

      api.start(name);
      api.appendLog(name, ['PLAY [all]', 'remote-worker: starting ansible-playbook']);
      const first = await l.logs(handle, run, empty.nextCursor);
      expect(first.lines.map((x) => [x.stream, x.text])).toEqual([
        ['stdout', 'PLAY [all]'],
        ['system', 'remote-worker: starting ansible-playbook'],
      ]);
      expect(first.lines.map((x) => x.seq)).toEqual([1, 2]);

      // Several lines in the same instant, split across reads: the k-of-t position keeps them apart.
      const ts = `${new Date(Date.now() + 1000).toISOString().slice(0, 19)}.5Z`;
      api.appendLog(name, ['same-1', 'same-2', 'same-3'], { ts });
      const second = await l.logs(handle, run, first.nextCursor);
      api.appendLog(name, ['same-4', 'same-5'], { ts });
      api.appendLog(name, ['TASK [ping]', 'still writing'], { open: true });
      const third = await l.logs(handle, run, second.nextCursor);
      const fourth = await l.logs(handle, run, third.nextCursor);
      api.appendLog(name, ['PLAY RECAP']);
      const fifth = await l.logs(handle, run, fourth.nextCursor);

      expect(second.lines.map((x) => x.text)).toEqual(['same-1', 'same-2', 'same-3']);
      expect(second.lines[0]?.at).toBe(ts);
      // The unterminated line waits until it is complete.
      expect(third.lines.map((x) => x.text)).toEqual(['same-4', 'same-5', 'TASK [ping]']);
      expect(fourth.lines).toEqual([]);
      expect(fourth.nextCursor).toBe(third.nextCursor);
      expect(fifth.lines.map((x) => x.text)).toEqual(['still writing', 'PLAY RECAP']);
      expect(fifth.lines.map((x) => x.seq)).toEqual([9, 10]);
      // Later reads ask only for the tail of the log: since the last line read, to the second.
      const logReads = api.requests.filter((r) => r.path.endsWith(`/pods/${name}/log`));
      expect(logReads.at(-1)?.query).toMatchObject({
        timestamps: 'true',
        sinceTime: `${third.lines.at(-1)?.at.slice(0, 19)}Z`,
      });
    });

    it('archives the log before deleting the pod and continues a live cursor in the archive', async () => {
      const run = dispatchingRun();
      const l = launcher();
      const handle = await l.launch({ run, image: IMAGE });
      const name = podOf(run);
      api.start(name);
      api.appendLog(name, ['line 1', 'line 2']);
      const live = await l.logs(handle, run);
      api.appendLog(name, ['line 3', 'line 4']);
      api.appendLog(name, ['no newline at the end'], { open: true });
      api.finish(name, { exitCode: 0 });

      await l.cleanup(handle, run);
      expect(objectsOf(run)).toEqual([]);
      const rest = await readAll(l, handle, run, live.nextCursor);

      expect(live.lines.map((x) => x.text)).toEqual(['line 1', 'line 2']);
      expect(rest.texts).toEqual(['line 3', 'line 4', 'no newline at the end']);
      // From the start, after cleanup: the archive, opened by the pod's marker.
      const all = await readAll(l, handle, run);
      expect(all.texts).toEqual([
        `k8s: log of pod ${NAMESPACE}/${name} (attempt 1) follows`,
        'line 1',
        'line 2',
        'line 3',
        'line 4',
        'no newline at the end',
      ]);
      // Cleanup again: nothing archived twice, nothing left to delete.
      await l.cleanup(handle, run);
      expect((await archived(run.id)).length).toBe(6);
      expect((await l.logs(handle, run, rest.cursor)).lines).toEqual([]);
    });

    it('answers at most the limit asked for, from the live pod and from the archive', async () => {
      const run = dispatchingRun();
      const l = launcher();
      const handle = await l.launch({ run, image: IMAGE });
      const name = podOf(run);
      api.start(name);
      api.appendLog(name, ['line 1', 'line 2', 'line 3', 'line 4', 'line 5']);

      const live = await l.logs(handle, run, undefined, 2);
      const next = await l.logs(handle, run, live.nextCursor, 2);
      api.finish(name, { exitCode: 0 });
      await l.cleanup(handle, run);
      const archived = await l.logs(handle, run, undefined, 3);

      expect(live.lines.map((x) => x.text)).toEqual(['line 1', 'line 2']);
      expect(next.lines.map((x) => x.text)).toEqual(['line 3', 'line 4']);
      expect(archived.lines).toHaveLength(3);
    });

    it('refuses a cursor it did not hand out', async () => {
      const run = dispatchingRun();
      await expect(
        launcher().logs(`kubernetes:${NAMESPACE}/${podOf(run)}#a1`, run, 'bm9wZQ'),
      ).rejects.toThrow(/cursor is not a cursor this API returned/);
    });

    it('follows the log into the archive while the pod runs, and ends with the pod', async () => {
      const run = dispatchingRun();
      const l = launcher();
      const handle = await l.launch({ run, image: IMAGE });
      const name = podOf(run);
      api.start(name);
      api.appendLog(name, ['before follow']);
      const live = await l.logs(handle, run);

      const following = l.follow(handle, run);
      await waitFor(() => api.followers(name) === 1, 'the follow stream');
      api.appendLog(name, ['streamed 1', 'streamed 2']);
      await waitFor(async () => (await archived(run.id)).length === 4, 'streamed lines in the archive');
      // Archived while the pod still runs, and the live view is unchanged by it.
      expect((await archived(run.id)).map((x) => x.text).slice(1)).toEqual([
        'before follow',
        'streamed 1',
        'streamed 2',
      ]);
      api.appendLog(name, ['last words'], { open: true });
      api.finish(name, { exitCode: 3 });

      expect(await following).toEqual({ archived: 4 });
      await l.cleanup(handle, run);
      expect((await archived(run.id)).map((x) => x.text)).toEqual([
        `k8s: log of pod ${NAMESPACE}/${name} (attempt 1) follows`,
        'before follow',
        'streamed 1',
        'streamed 2',
        'last words',
      ]);
      expect((await readAll(l, handle, run, live.nextCursor)).texts).toEqual([
        'streamed 1',
        'streamed 2',
        'last words',
      ]);
    });

    it('stops a follower on cleanup and archives the rest itself, once', async () => {
      const run = dispatchingRun();
      const l = launcher();
      const handle = await l.launch({ run, image: IMAGE });
      const name = podOf(run);
      api.start(name);
      const following = l.follow(handle, run);
      await waitFor(() => api.followers(name) === 1, 'the follow stream');
      api.appendLog(name, ['a', 'b']);
      await waitFor(async () => (await archived(run.id)).length === 3, 'streamed lines');
      api.appendLog(name, ['c']);

      await l.cleanup(handle, run);

      await following;
      expect((await archived(run.id)).map((x) => x.text).slice(1)).toEqual(['a', 'b', 'c']);
      expect(objectsOf(run)).toEqual([]);
    });
  });

  describe('cancel and cleanup', () => {
    it('cancel archives the log and deletes the pod with the given grace; gone already is success', async () => {
      const run = dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] });
      const l = launcher();
      const handle = await l.launch({ run, image: IMAGE });
      const name = podOf(run);
      api.start(name);
      api.appendLog(name, ['working']);
      const mark = api.requests.length;

      await l.cancel(handle, run, 17);

      const deletes = since(mark).filter((r) => r.method === 'DELETE');
      expect(deletes.map((r) => [r.path.split('/').slice(5).join('/'), r.query.gracePeriodSeconds])).toEqual([
        [`pods/${name}`, '17'],
      ]);
      expect(api.get('pods', name)).toBeUndefined();
      expect((await archived(run.id)).map((x) => x.text).slice(1)).toEqual(['working']);
      await expect(l.cancel(handle, run, 17)).resolves.toBeUndefined();
      // The Secret and ConfigMap wait for cleanup, which then works after the cancel.
      expect(objectsOf(run).sort()).toEqual([
        `configmaps/${configMapNameFor(name)}`,
        `secrets/${secretNameFor(name)}`,
      ]);
      await l.cleanup(handle, run);
      expect(objectsOf(run)).toEqual([]);
      expect((await readAll(l, handle, run)).texts.slice(1)).toEqual(['working']);
    });

    it('cleanup removes every object of the run, other attempts and a half-created set included, idempotently', async () => {
      const run = dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] });
      const l = launcher();
      const first = await l.launch({ run, image: IMAGE });
      api.start(podOf(run));
      api.finish(podOf(run), { exitCode: 1 });
      // Attempt 2: only its pod and Secret were made before the launcher died.
      const run2 = { ...run, attempt: 2 };
      api.fail({ method: 'POST', path: /\/configmaps$/, status: 500, times: 4 });
      await expect(l.launch({ run: run2, image: IMAGE })).rejects.toThrow(LauncherUnavailableError);
      const handle2 = `kubernetes:${NAMESPACE}/${podOf(run2)}#a2`;
      // Labelled objects whose names follow no pod (an older naming, a hand-made copy): only the selector finds them.
      const labels = {
        'app.kubernetes.io/managed-by': 'remote-worker',
        'remote-worker/run-id': runIdLabelValue(run.id),
        'remote-worker/attempt': '0',
      };
      api.seed('secrets', { metadata: { name: 'legacy-env', labels }, data: {} });
      api.seed('configmaps', { metadata: { name: 'legacy-task', labels }, data: {} });
      expect(objectsOf(run)).toHaveLength(7);
      const other = dispatchingRun();
      await l.launch({ run: other, image: IMAGE });

      await l.cleanup(handle2, run2);

      expect(objectsOf(run)).toEqual([]);
      expect(objectsOf(other)).toHaveLength(2);
      const mark = api.requests.length;
      await l.cleanup(handle2, run2);
      await l.cleanup(first, run);
      expect(since(mark).every((r) => r.status === 200 || r.status === 404)).toBe(true);
      // Both attempts' logs are in the archive, each behind its marker.
      expect((await archived(run.id)).filter((x) => x.stream === 'system').map((x) => x.text)).toEqual([
        `k8s: log of pod ${NAMESPACE}/${podOf(run)} (attempt 1) follows`,
        `k8s: log of pod ${NAMESPACE}/${podOf(run2)} (attempt 2) follows`,
      ]);
      await l.cleanup(`kubernetes:${NAMESPACE}/${podOf(other)}#a1`, other);
    });
  });

  describe('throttling', () => {
    it('retries 429 after the Retry-After the server asked for, and 5xx, then succeeds', async () => {
      const run = dispatchingRun();
      const l = launcher();
      const name = podOf(run);
      api.fail({ method: 'POST', path: /\/pods$/, status: 429, retryAfter: 1 });
      api.fail({ method: 'POST', path: /\/configmaps$/, status: 500, times: 2 });
      const mark = api.requests.length;
      const started = Date.now();

      const handle = await l.launch({ run, image: IMAGE });

      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(handle).toContain(name);
      expect(creates(since(mark), 'pods').map((r) => r.status)).toEqual([429, 201]);
      expect(creates(since(mark), 'configmaps').map((r) => r.status)).toEqual([500, 500, 201]);
      expect(api.names('pods').filter((n) => n === name)).toHaveLength(1);
    });

    it('gives up on a persistent failure with LauncherUnavailableError, and an unreachable server too', async () => {
      const run = dispatchingRun();
      const l = launcher({ retry: { attempts: 3, baseMs: 1 } });
      api.fail({ method: 'GET', path: /\/pods\/[^/]+$/, status: 503, times: 3 });
      const mark = api.requests.length;

      const error = await l.status(`kubernetes:${NAMESPACE}/${podOf(run)}#a1`, run).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(LauncherUnavailableError);
      expect((error as DomainError).retryable).toBe(true);
      expect((error as Error).message).toMatch(
        /^Kubernetes read pod rw-.* failed, will retry \(503 InternalError: /,
      );
      expect(since(mark)).toHaveLength(3);

      const offlinePath = join(dir, 'offline-kubeconfig');
      writeFileSync(offlinePath, api.kubeconfig().replace(api.server, 'https://127.0.0.1:9'));
      const offline = launcher({
        kubeConfig: loadKubeConfig({ kind: 'file', path: offlinePath }),
        retry: { attempts: 2, baseMs: 1 },
      });
      await expect(offline.launch({ run, image: IMAGE })).rejects.toThrow(LauncherUnavailableError);
    });
  });

  describe('collectOrphans', () => {
    it('archives and removes the objects of runs that are over or unknown, and keeps active ones', async () => {
      const l = launcher();
      const done = dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] });
      const active = dispatchingRun();
      const unknown = dispatchingRun();
      for (const run of [done, active, unknown]) await l.launch({ run, image: IMAGE });
      api.start(podOf(done));
      api.appendLog(podOf(done), ['orphaned output']);
      api.finish(podOf(done), { exitCode: 0 });
      // A leftover ConfigMap whose pod is already gone.
      api.remove('pods', podOf(unknown));
      api.seed('configmaps', {
        metadata: { name: 'stray', labels: { 'app.kubernetes.io/managed-by': 'remote-worker' } },
        data: {},
      });
      const asked: string[] = [];

      // A fresh launcher, as after a restart.
      const report = await launcher().collectOrphans(async (runId) => {
        asked.push(runId);
        return runId === active.id;
      });

      // Runs left over by earlier tests are unknown too, and collected with them.
      expect(report.collected).toEqual(expect.arrayContaining([done.id, unknown.id]));
      expect(report.kept).toEqual([active.id]);
      expect(asked).toEqual(expect.arrayContaining([done.id, unknown.id, active.id]));
      expect(report.unidentified).toEqual(['configmap/stray']);
      expect(objectsOf(done)).toEqual([]);
      expect(objectsOf(unknown)).toEqual([]);
      expect(objectsOf(active)).toHaveLength(2);
      expect((await archived(done.id)).map((x) => x.text).slice(1)).toEqual(['orphaned output']);
      await l.cleanup(`kubernetes:${NAMESPACE}/${podOf(active)}#a1`, active);
      api.remove('configmaps', 'stray');
    });
  });

  describe('RBAC example', () => {
    it('grants the launcher exactly the verbs it used against the API, in a namespaced Role', () => {
      const text = readFileSync(
        new URL('../../examples/kubernetes-runner/rbac.yaml', import.meta.url),
        'utf8',
      );
      const docs = parseAllDocuments(text).map((d) => d.toJS() as any);
      const kinds = docs.map((d) => d.kind);
      expect(kinds.filter((k) => k === 'ClusterRole' || k === 'ClusterRoleBinding')).toEqual([]);
      const role = docs.find((d) => d.kind === 'Role');
      const binding = docs.find((d) => d.kind === 'RoleBinding');
      const accounts = docs.filter((d) => d.kind === 'ServiceAccount');
      const namespace = docs.find((d) => d.kind === 'Namespace');
      expect(namespace?.metadata?.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
      expect(accounts.map((a) => a.metadata.name).sort()).toEqual([
        'remote-worker-control-plane',
        'remote-worker-task',
      ]);
      expect(
        accounts.find((a) => a.metadata.name === 'remote-worker-task')?.automountServiceAccountToken,
      ).toBe(false);
      expect(binding).toMatchObject({
        roleRef: { kind: 'Role', name: role.metadata.name },
        subjects: [{ kind: 'ServiceAccount', name: 'remote-worker-control-plane' }],
      });

      const grants = (
        rules: readonly {
          apiGroups: readonly string[];
          resources: readonly string[];
          verbs: readonly string[];
        }[],
      ) =>
        [
          ...new Set(
            rules.flatMap((r) =>
              r.resources.flatMap((res) => r.verbs.map((v) => `${r.apiGroups.join()}:${res}:${v}`)),
            ),
          ),
        ].sort();
      // What the launcher really sent in every test of this file.
      const used = [
        ...new Set(
          api.requests
            .filter((r) => r.authorized && r.path.startsWith('/api/v1/namespaces/'))
            .map((r) => {
              const [, , , , , resource, name, sub] = r.path.split('/');
              if (sub === 'log') return ':pods/log:get';
              const verb =
                r.method === 'POST'
                  ? 'create'
                  : r.method === 'DELETE'
                    ? name === undefined
                      ? 'deletecollection'
                      : 'delete'
                    : name === undefined
                      ? 'list'
                      : 'get';
              return `:${resource}:${verb}`;
            }),
        ),
      ].sort();

      expect(grants(role.rules)).toEqual(used);
      expect(grants(KUBERNETES_RBAC_RULES)).toEqual(used);
      expect(role.metadata.namespace).toBe(NAMESPACE);
      expect(api.unsupported).toEqual([]);
    });
  });
});

describe('parsePodLog', () => {
  it('splits a timestamped log, holding back an unterminated line unless final', () => {
    const text = '2026-01-01T00:00:00.1Z a b\n2026-01-01T00:00:00.2Z \n2026-01-01T00:00:01Z tail';
    expect(parsePodLog(text, { final: false })).toEqual([
      { ts: '2026-01-01T00:00:00.1Z', text: 'a b' },
      { ts: '2026-01-01T00:00:00.2Z', text: '' },
    ]);
    expect(parsePodLog(text, { final: true }).at(-1)).toEqual({ ts: '2026-01-01T00:00:01Z', text: 'tail' });
  });

  it('turns a node-local timestamp into UTC without losing nanoseconds', () => {
    expect(utcTimestamp('2026-01-01T01:00:00.000000100+01:00')).toBe('2026-01-01T00:00:00.0000001Z');
    expect(utcTimestamp('2026-01-01T00:00:00Z')).toBe('2026-01-01T00:00:00Z');
    expect(utcTimestamp('yesterday')).toBeUndefined();
  });
});
