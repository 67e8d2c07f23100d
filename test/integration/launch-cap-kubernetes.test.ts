import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { podNameFor } from '../../shared/adapters/kubernetes/handle.ts';
import { KubernetesLauncher } from '../../shared/adapters/kubernetes/launcher.ts';
import { InProcessLaunchBudgets } from '../../shared/adapters/local/launch-budget.ts';
import { SqliteLaunchSlots } from '../../shared/adapters/sqlite/launch-slots.ts';
import { SqliteWorkQueue } from '../../shared/adapters/sqlite/work-queue.ts';
import type { AppDeps } from '../../shared/app/deps.ts';
import { dispatchRun } from '../../shared/app/dispatch.ts';
import { reconcileRuns } from '../../shared/app/reconcile.ts';
import { settleRun } from '../../shared/app/run-updates.ts';
import { syncBackends } from '../../shared/app/sync-backends.ts';
import { transition } from '../../shared/domain/run.ts';
import { decodeRunMessage, encodeRunMessage } from '../../shared/domain/run-message.ts';
import type { Target } from '../../shared/domain/target.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import type { PreparedTask } from '../../shared/ports/launcher.ts';
import { type KubePeers, startKubePeers } from '../support/kube-peers.ts';
import { createQueuedRun, makeTestApp, T0, type TestApp } from '../unit/app/harness.ts';

/*
 * A burst of Kubernetes runs beyond a launch cap of 3 pods per namespace, on
 * the real Kubernetes launcher (client-node) against the loopback fake API
 * (test/support/fake-kube-api.ts), with the SQLite slot store, run store and
 * dispatch queue (dead-letter queue after 5 receives) as local mode has them.
 * The test plays the cluster: it starts and finishes the pods the fake holds,
 * and counts, after every step, the pods that are not finished (the cap must
 * hold there, where the quota would be counted). The status sync settles
 * finished pods, which lets their slots go; the clock is manual, so a run that
 * waits for a slot comes back exactly when its delayed message is due.
 *
 * Where the fake differs from a cluster: no scheduler or kubelet (the test
 * moves pods), no ResourceQuota admission (the cap is ours; the quota's own
 * 403 "exceeded quota" is mapped in test/unit/adapters/kubernetes/quota-errors.test.ts),
 * and finished pods stay until the launcher's cleanup deletes them.
 */

const RUNS = 12;
const CAP = 3;
const SCOPE = 'kubernetes#remote-worker';

const cluster: Target = {
  id: 'k-eks',
  kind: 'cluster',
  cloud: 'aws',
  name: 'prod',
  provider: 'eks',
  region: 'eu-west-1',
  clusterName: 'prod',
  credentialsRef: 'kube/prod',
  createdAt: T0,
  updatedAt: T0,
};

let peers: KubePeers;
let app: TestApp;
let deps: AppDeps;
let slots: SqliteLaunchSlots;
let deadLetter: SqliteWorkQueue;

beforeAll(async () => {
  peers = await startKubePeers();
  const launcher = new KubernetesLauncher({
    kubeConfig: peers.kubeConfig,
    namespace: peers.namespace,
    serviceAccountName: 'remote-worker-task',
    archive: peers.archive,
    pollIntervalSeconds: 0.05,
    retry: { baseMs: 1, maxMs: 50 },
    // The task itself is not what this test is about: a spec with nothing secret.
    prepare: async (): Promise<PreparedTask> =>
      ({ spec: { secretVars: [] } as unknown as TaskSpec, secretEnv: {}, secretRefs: {} }) as PreparedTask,
  });
  app = makeTestApp({ env: { K8S_RUNNER_AWS: 'kubernetes' } });
  await app.targets.putTarget(cluster);
  slots = new SqliteLaunchSlots({ db: app.db });
  deadLetter = new SqliteWorkQueue({
    db: app.db,
    name: 'dispatch-dlq',
    visibilityTimeoutSeconds: 30,
    clock: app.clock,
  });
  const dispatchQueue = new SqliteWorkQueue({
    db: app.db,
    name: 'dispatch-capped',
    visibilityTimeoutSeconds: 30,
    maxReceiveCount: 5,
    deadLetter,
    clock: app.clock,
  });
  deps = {
    ...app.deps,
    dispatchQueue,
    launchers: { kubernetes: launcher },
    // Cloud runners read assets from an object store (planRun's check); the launcher's prepare above reads none.
    storage: { setup: { active: 's3' }, assets: app.deps.assets },
    launchBudget: {
      store: new InProcessLaunchBudgets(),
      scopes: {},
      slots,
      caps: { kubernetes: { key: SCOPE, cap: CAP } },
      capWaitSeconds: 1,
      random: () => 0,
    },
  };
}, 30_000);

afterAll(async () => {
  app?.close();
  await peers?.close();
});

/** Pods the fake holds that have not finished: what a `pods` ResourceQuota counts. */
function livePods(): string[] {
  return peers.fake.names('pods').filter((name) => {
    const phase = peers.fake.get('pods', name)?.status?.phase;
    return phase !== 'Succeeded' && phase !== 'Failed';
  });
}

/** Deliver every due dispatch message once, as the queue pump does; failures stay on the queue. */
async function pump(): Promise<{ outcomes: string[]; failures: number }> {
  const outcomes: string[] = [];
  let failures = 0;
  for (;;) {
    const batch = await deps.dispatchQueue.receive({ max: 10 });
    if (batch.length === 0) return { outcomes, failures };
    for (const m of batch) {
      const runId = decodeRunMessage(m.body)?.runId ?? '?';
      try {
        const outcome = await dispatchRun(deps, runId, `dispatcher:${m.receiveCount}`);
        outcomes.push(typeof outcome === 'string' ? outcome : 'launched');
        await deps.dispatchQueue.delete(m.receiptHandle);
      } catch {
        failures += 1;
      }
    }
  }
}

const sync = () => syncBackends(deps, { staleAfterSeconds: 0, missingGraceSeconds: 600 });

describe('launch cap: a Kubernetes burst beyond the pods-per-namespace cap (loopback API)', () => {
  it('never runs more than the cap, launches every run once as slots free, and prunes a crashed run’s slot', async () => {
    const ids = Array.from({ length: RUNS }, (_, i) => `run-${String(i).padStart(2, '0')}`);
    for (const id of ids) {
      await createQueuedRun(app.store, app.clock, {
        id,
        kind: 'k8s_op',
        targetId: cluster.id,
        operation: { action: 'apply' },
      });
      await deps.dispatchQueue.send(encodeRunMessage(id));
    }

    let maxLive = 0;
    let failures = 0;
    const observe = () => {
      maxLive = Math.max(maxLive, livePods().length);
    };

    // The first offer: the cap's worth launch, the rest wait with the reason.
    const first = await pump();
    failures += first.failures;
    observe();
    expect(first.outcomes.filter((o) => o === 'launched')).toHaveLength(CAP);
    expect(first.outcomes.filter((o) => o === 'deferred')).toHaveLength(RUNS - CAP);
    const waiting = await app.store.getRun(ids[RUNS - 1] ?? '');
    expect(waiting).toMatchObject({ state: 'dispatching', reason: 'waiting: Kubernetes pods per namespace' });
    expect(await slots.holders(SCOPE)).toHaveLength(CAP);

    // A crash: one launched run is recorded ended, but its slot was never let go.
    const [crashed] = await slots.holders(SCOPE);
    if (crashed === undefined) throw new Error('no holder');
    await settleRun(app.store, crashed, (r) =>
      transition(r, 'failed', app.clock.now(), { reason: 'crashed' }),
    );
    peers.fake.finish(podNameFor({ runId: crashed, attempt: 1 }), { exitCode: 1 });

    // Full, with the crashed run's slot held: a waiting run offered again still waits.
    app.clock.advance(1000);
    const stillFull = await pump();
    failures += stillFull.failures;
    observe();
    expect(stillFull.outcomes.every((o) => o === 'deferred')).toBe(true);
    // The reconciler lets the crashed run's slot go.
    expect(
      (await reconcileRuns(deps, { requeueAfterSeconds: 600, deadlineGraceSeconds: 600 })).prunedSlots,
    ).toEqual([crashed]);

    // The cluster runs and finishes pods one at a time; each end frees a slot for a waiting run.
    for (let round = 0; round < RUNS * 3 && (await app.store.listActiveRuns(100)).length > 0; round++) {
      app.clock.advance(1000);
      const offered = await pump();
      failures += offered.failures;
      observe();
      const [next] = livePods();
      if (next !== undefined) {
        peers.fake.start(next);
        peers.fake.finish(next, { exitCode: 0 });
      }
      await sync();
      observe();
    }

    expect(maxLive).toBeLessThanOrEqual(CAP);
    expect(maxLive).toBe(CAP);
    expect(failures).toBe(0);
    expect(await deadLetter.receive({ max: 10 })).toEqual([]);
    const states = new Map<string, number>();
    for (const id of ids) {
      const run = await app.store.getRun(id);
      const key = `${run?.state}:${run?.attempt}`;
      states.set(key, (states.get(key) ?? 0) + 1);
    }
    expect(Object.fromEntries(states)).toEqual({ 'succeeded:1': RUNS - 1, 'failed:1': 1 });
    // Each run created its pod exactly once (a 409 adoption would show as a second POST).
    const creates = peers.fake.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/pods'));
    expect(creates.map((r) => JSON.parse(r.body).metadata.name).sort()).toEqual(
      ids.map((id) => podNameFor({ runId: id, attempt: 1 })).sort(),
    );
    expect(await slots.holders(SCOPE)).toEqual([]);
  }, 120_000);
});
