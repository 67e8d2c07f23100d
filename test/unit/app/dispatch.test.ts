import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeDispatchRuns } from '../../../functions/dispatcher/dispatch-runs.ts';
import { openDatabase } from '../../../shared/adapters/sqlite/database.ts';
import { SqliteRunStore } from '../../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../../shared/adapters/sqlite/target-store.ts';
import { SqliteWorkQueue } from '../../../shared/adapters/sqlite/work-queue.ts';
import type { AppDeps } from '../../../shared/app/deps.ts';
import { dispatchRun } from '../../../shared/app/dispatch.ts';
import { settleRun } from '../../../shared/app/run-updates.ts';
import { cancelRun } from '../../../shared/app/runs.ts';
import { loadSettings } from '../../../shared/config/settings.ts';
import {
  DomainError,
  InvalidTransitionError,
  LauncherUnavailableError,
  LaunchRejectedError,
} from '../../../shared/domain/errors.ts';
import { amend, isTerminal, type Run, type RunState, transition } from '../../../shared/domain/run.ts';
import { encodeRunMessage } from '../../../shared/domain/run-message.ts';
import type { Target } from '../../../shared/domain/target.ts';
import type { RunStore } from '../../../shared/ports/run-store.ts';
import type { TargetStore } from '../../../shared/ports/target-store.ts';
import {
  createQueuedRun,
  ManualClock,
  makeTestApp,
  RecordingLauncher,
  silentLogger,
  type TestApp,
  vmTarget,
} from './harness.ts';

const sqsRecord = (messageId: string, body: string): SQSRecord => ({
  messageId,
  receiptHandle: `receipt-${messageId}`,
  body,
  attributes: {
    ApproximateReceiveCount: '1',
    SentTimestamp: '0',
    SenderId: 'test',
    ApproximateFirstReceiveTimestamp: '0',
  },
  messageAttributes: {},
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: 'arn:aws:sqs:eu-west-1:000000000000:dispatch',
  awsRegion: 'eu-west-1',
});

const context = { awsRequestId: 'req-1' } as Context;

describe('dispatchRun', () => {
  let app: TestApp;

  beforeEach(async () => {
    app = makeTestApp();
    await app.targets.putTarget(vmTarget('vm-1'));
  });
  afterEach(() => app.close());

  it('launches a queued run, storing the handle and attempt 1', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });

    const outcome = await dispatchRun(app.deps, run.id, 'dispatcher:m-1');

    expect(outcome).toBe('launched');
    const stored = await app.store.getRun(run.id);
    expect(stored).toMatchObject({
      state: 'launched',
      attempt: 1,
      owner: 'dispatcher:m-1',
      runner: 'local',
      launch: { backend: 'local', handle: 'fake:run-1#1' },
    });
    expect(stored?.history.map((h) => h.state)).toEqual(['queued', 'dispatching', 'launched']);
    expect(app.launcher.launches).toEqual([
      { runId: 'run-1', attempt: 1, key: 'run-1#1', image: 'chrweav/ansible-winrm:latest' },
    ]);
  });

  it('does nothing on a duplicate message for a launched run', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    await dispatchRun(app.deps, run.id, 'dispatcher:m-1');
    const launched = await app.store.getRun(run.id);

    const outcome = await dispatchRun(app.deps, run.id, 'dispatcher:m-1-again');

    expect(outcome).toBe('skipped');
    expect(app.launcher.launches).toHaveLength(1);
    expect(await app.store.getRun(run.id)).toEqual(launched);
  });

  it('takes over a run a crashed dispatcher left dispatching, with the same attempt', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    const claimed = transition(run, 'dispatching', app.clock.now(), {
      patch: { owner: 'dispatcher:dead', attempt: 1 },
    });
    const intent = amend(claimed, app.clock.now(), {
      launch: { backend: 'local', intentAt: app.clock.now() },
    });
    await app.store.updateRun(intent, run.version);

    const outcome = await dispatchRun(app.deps, run.id, 'dispatcher:m-2');

    expect(outcome).toBe('launched');
    expect(app.launcher.launches.map((l) => l.key)).toEqual(['run-1#1']);
    expect(await app.store.getRun(run.id)).toMatchObject({
      state: 'launched',
      attempt: 1,
      owner: 'dispatcher:m-2',
      launch: { handle: 'fake:run-1#1' },
    });
  });

  it('launches again with the same key after a crash between the backend call and the write, and the launcher adopts the task', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    app.launcher.afterTaskCreated = () => {
      app.launcher.afterTaskCreated = undefined;
      throw new Error('dispatcher process died');
    };
    await expect(dispatchRun(app.deps, run.id, 'dispatcher:m-1')).rejects.toThrow('dispatcher process died');
    expect((await app.store.getRun(run.id))?.state).toBe('dispatching');

    const outcome = await dispatchRun(app.deps, run.id, 'dispatcher:m-1-redelivered');

    expect(outcome).toBe('launched');
    expect(app.launcher.launches.map((l) => l.key)).toEqual(['run-1#1', 'run-1#1']);
    expect(app.launcher.tasks.size).toBe(1);
    expect(await app.store.getRun(run.id)).toMatchObject({
      state: 'launched',
      attempt: 1,
      launch: { handle: 'fake:run-1#1' },
    });
  });

  it('never launches a run cancelled before the claim', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    await cancelRun(app.deps, run.id);

    const outcome = await dispatchRun(app.deps, run.id, 'dispatcher:m-1');

    expect(outcome).toBe('skipped');
    expect(app.launcher.launches).toHaveLength(0);
    expect(await app.store.getRun(run.id)).toMatchObject({ state: 'cancelled', cancelRequested: true });
  });

  it('cancels without launching a dispatching run whose cancel flag was set meanwhile', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    const claimed = transition(run, 'dispatching', app.clock.now(), {
      patch: { owner: 'dispatcher:dead', attempt: 1 },
    });
    await app.store.updateRun(claimed, run.version);
    await cancelRun(app.deps, run.id);

    const outcome = await dispatchRun(app.deps, run.id, 'dispatcher:m-2');

    expect(outcome).toBe('settled');
    expect(app.launcher.launches).toHaveLength(0);
    expect(await app.store.getRun(run.id)).toMatchObject({
      state: 'cancelled',
      reason: 'Cancelled before launch',
    });
  });

  it('refuses a run whose target was deleted before dispatch', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    await app.targets.deleteTarget('vm-1');

    const outcome = await dispatchRun(app.deps, run.id, 'dispatcher:m-1');

    expect(outcome).toBe('settled');
    expect(app.launcher.launches).toHaveLength(0);
    expect(await app.store.getRun(run.id)).toMatchObject({
      state: 'refused',
      reason: 'Target vm-1 was deleted before the run started',
    });
  });

  it('refuses with the seeds’ message when the settings now resolve to an unconfigured ECS runner', async () => {
    const ecsApp = makeTestApp({ env: { ANSIBLE_RUNNER_AWS: 'ecs' } });
    try {
      await ecsApp.targets.putTarget(vmTarget('vm-aws', { cloud: 'aws' }));
      const run = await createQueuedRun(ecsApp.store, ecsApp.clock, { id: 'run-1', targetId: 'vm-aws' });

      const outcome = await dispatchRun(ecsApp.deps, run.id, 'dispatcher:m-1');

      expect(outcome).toBe('settled');
      expect(ecsApp.launcher.launches).toHaveLength(0);
      expect(await ecsApp.store.getRun(run.id)).toMatchObject({
        state: 'refused',
        reason:
          'Ansible ECS runner is not configured: set ansible_ecs_subnet_id, ansible_ecs_execution_role_arn',
      });
    } finally {
      ecsApp.close();
    }
  });

  it('refuses when no launcher serves the resolved runner', async () => {
    const bare = makeTestApp({ launchers: () => ({}) });
    try {
      await bare.targets.putTarget(vmTarget('vm-1'));
      const run = await createQueuedRun(bare.store, bare.clock, { id: 'run-1' });

      await dispatchRun(bare.deps, run.id, 'dispatcher:m-1');

      expect(await bare.store.getRun(run.id)).toMatchObject({
        state: 'refused',
        reason:
          'The local (relay) runner is not available in this deployment: no launcher for it is configured',
      });
    } finally {
      bare.close();
    }
  });

  it('refuses a local run when the relay has become unreachable, saying why', async () => {
    const noRelay = makeTestApp({ relay: { available: false, reason: 'no Docker engine answers' } });
    try {
      await noRelay.targets.putTarget(vmTarget('vm-1'));
      const run = await createQueuedRun(noRelay.store, noRelay.clock, { id: 'run-1' });

      await dispatchRun(noRelay.deps, run.id, 'dispatcher:m-1');

      expect(noRelay.launcher.launches).toHaveLength(0);
      expect(await noRelay.store.getRun(run.id)).toMatchObject({
        state: 'refused',
        reason: 'No relay is reachable to run this on the local runner: no Docker engine answers',
      });
    } finally {
      noRelay.close();
    }
  });

  it('rethrows a retryable launcher error and keeps the run dispatching for the redelivery', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    app.launcher.failures.push(new LauncherUnavailableError('throttled'));

    await expect(dispatchRun(app.deps, run.id, 'dispatcher:m-1')).rejects.toBeInstanceOf(
      LauncherUnavailableError,
    );
    expect(await app.store.getRun(run.id)).toMatchObject({ state: 'dispatching', attempt: 1 });

    const outcome = await dispatchRun(app.deps, run.id, 'dispatcher:m-1-again');

    expect(outcome).toBe('launched');
    expect(app.launcher.launches.map((l) => l.key)).toEqual(['run-1#1', 'run-1#1']);
    expect((await app.store.getRun(run.id))?.attempt).toBe(1);
  });

  it('fails the run with the reason when the backend rejects the launch for good', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    app.launcher.failures.push(new LaunchRejectedError('image chrweav/ansible-winrm:latest not found'));

    const outcome = await dispatchRun(app.deps, run.id, 'dispatcher:m-1');

    expect(outcome).toBe('settled');
    expect(await app.store.getRun(run.id)).toMatchObject({
      state: 'failed',
      reason: 'The local backend rejected the launch: image chrweav/ansible-winrm:latest not found',
    });
  });

  it('stops the task when a cancel arrives while the launch is in flight', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    app.launcher.beforeLaunch = async () => {
      await cancelRun(app.deps, run.id);
    };

    await dispatchRun(app.deps, run.id, 'dispatcher:m-1');

    expect(app.launcher.cancels).toEqual([{ handle: 'fake:run-1#1', runId: 'run-1', graceSeconds: 30 }]);
  });

  it('stops the task it just launched when the run was settled while the launch was in flight', async () => {
    // The reconciler times out a run stuck dispatching (or the DLQ settles it) while this
    // dispatcher is inside launcher.launch: the task it starts has no run left to report to.
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    app.launcher.beforeLaunch = async () => {
      await settleRun(app.store, run.id, (r) =>
        transition(r, 'timed_out', app.clock.now(), { reason: 'reconciler' }),
      );
    };

    await dispatchRun(app.deps, run.id, 'dispatcher:m-1');

    expect(await app.store.getRun(run.id)).toMatchObject({ state: 'timed_out', reason: 'reconciler' });
    expect(app.launcher.cancels.map((c) => c.handle)).toContain('fake:run-1#1');
  });

  it('drops a message for a run that does not exist', async () => {
    const outcome = await dispatchRun(app.deps, 'no-such-run', 'dispatcher:m-1');

    expect(outcome).toBe('skipped');
    expect(app.launcher.launches).toHaveLength(0);
  });
});

describe('makeDispatchRuns', () => {
  let app: TestApp;

  beforeEach(async () => {
    app = makeTestApp();
    await app.targets.putTarget(vmTarget('vm-1'));
  });
  afterEach(() => app.close());

  it('reports only the record whose launch failed retryably, while the rest of the batch launches', async () => {
    await createQueuedRun(app.store, app.clock, { id: 'run-a' });
    await createQueuedRun(app.store, app.clock, { id: 'run-b' });
    app.launcher.failuresFor.set('run-a', [new LauncherUnavailableError('ECS throttled us')]);
    const handler = makeDispatchRuns({ ...app.deps, ownerId: 'dispatcher' });
    const event: SQSEvent = {
      Records: [sqsRecord('m-a', encodeRunMessage('run-a')), sqsRecord('m-b', encodeRunMessage('run-b'))],
    };

    const response = await handler(event, context);

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-a' }]);
    expect((await app.store.getRun('run-a'))?.state).toBe('dispatching');
    expect(await app.store.getRun('run-b')).toMatchObject({ state: 'launched', owner: 'dispatcher:m-b' });
  });

  it('settles a permanently rejected launch instead of reporting it for redelivery', async () => {
    await createQueuedRun(app.store, app.clock, { id: 'run-a' });
    app.launcher.failures.push(new LaunchRejectedError('bad task definition'));
    const handler = makeDispatchRuns({ ...app.deps, ownerId: 'dispatcher' });

    const response = await handler({ Records: [sqsRecord('m-a', encodeRunMessage('run-a'))] }, context);

    expect(response.batchItemFailures).toEqual([]);
    expect((await app.store.getRun('run-a'))?.state).toBe('failed');
  });

  it('drops poison bodies without reporting them as failures', async () => {
    await createQueuedRun(app.store, app.clock, { id: 'run-a' });
    const handler = makeDispatchRuns({ ...app.deps, ownerId: 'dispatcher' });
    const event: SQSEvent = {
      Records: [
        sqsRecord('m-junk', 'not json at all'),
        sqsRecord('m-shape', JSON.stringify({ id: 'run-a' })),
        sqsRecord('m-type', JSON.stringify({ runId: 42 })),
        sqsRecord('m-ok', encodeRunMessage('run-a')),
      ],
    };

    const response = await handler(event, context);

    expect(response.batchItemFailures).toEqual([]);
    expect(app.launcher.launches.map((l) => l.runId)).toEqual(['run-a']);
  });
});

// ---------------------------------------------------------------------------------------------
// Property: random interleavings of deliveries, duplicates, cancels and backend outcomes.
// ---------------------------------------------------------------------------------------------

type Op =
  | { readonly type: 'deliver'; readonly run: number }
  | { readonly type: 'redeliver'; readonly run: number }
  | { readonly type: 'cancel'; readonly run: number }
  | { readonly type: 'finish'; readonly run: number };

const RUN_IDS = ['run-0', 'run-1'] as const;
const runIndex = fc.integer({ min: 0, max: RUN_IDS.length - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ type: fc.constant('deliver' as const), run: runIndex }),
  fc.record({ type: fc.constant('redeliver' as const), run: runIndex }),
  fc.record({ type: fc.constant('cancel' as const), run: runIndex }),
  fc.record({ type: fc.constant('finish' as const), run: runIndex }),
);

interface Write {
  readonly version: number;
  readonly state: RunState;
}

/**
 * The real SQLite store, but every read and write of a run first waits for
 * fast-check's scheduler, so concurrent dispatchers, cancels and status
 * updates interleave in every order the scheduler picks.
 */
function scheduledStore(inner: RunStore, s: fc.Scheduler, writes: Map<string, Write[]>): RunStore {
  return {
    createRun: (run, options) => inner.createRun(run, options),
    createRuns: (runs) => inner.createRuns(runs),
    listRuns: (query) => inner.listRuns(query),
    listActiveRuns: (limit) => inner.listActiveRuns(limit),
    holdAccount: async (account, runId, options) => {
      await s.schedule(Promise.resolve(), `holdAccount ${account} ${runId}`);
      return inner.holdAccount(account, runId, options);
    },
    releaseAccount: (account, runId) => inner.releaseAccount(account, runId),
    claimRelayRun: (runId, claim) => inner.claimRelayRun(runId, claim),
    getRuns: (ids) => inner.getRuns(ids),
    getRun: async (id) => {
      await s.schedule(Promise.resolve(), `getRun ${id}`);
      return inner.getRun(id);
    },
    updateRun: async (run, expectedVersion) => {
      await s.schedule(Promise.resolve(), `updateRun ${run.id} → ${run.state} v${run.version}`);
      const written = await inner.updateRun(run, expectedVersion);
      writes.get(run.id)?.push({ version: written.version, state: written.state });
      return written;
    },
    advanceRun: async (id, advance) => {
      await s.schedule(Promise.resolve(), `advanceRun ${id} → ${advance.to}`);
      const got = await inner.advanceRun(id, advance);
      if (got.advanced) writes.get(id)?.push({ version: got.run.version, state: got.run.state });
      return got;
    },
    claimRun: async (id, claim) => {
      await s.schedule(Promise.resolve(), `claimRun ${id} by ${claim.owner}`);
      const got = await inner.claimRun(id, claim);
      if (got?.claimed === true) writes.get(id)?.push({ version: got.run.version, state: got.run.state });
      return got;
    },
  };
}

/** The real SQLite target store, whose reads wait for the scheduler like the run store's. */
function scheduledTargets(inner: TargetStore, s: fc.Scheduler): TargetStore {
  return {
    putTarget: (target: Target) => inner.putTarget(target),
    listTargets: () => inner.listTargets(),
    deleteTarget: (id) => inner.deleteTarget(id),
    getTarget: async (id) => {
      await s.schedule(Promise.resolve(), `getTarget ${id}`);
      return inner.getTarget(id);
    },
  };
}

interface Observed {
  readonly runs: readonly Run[];
  readonly writes: ReadonlyMap<string, readonly Write[]>;
  readonly launcher: RecordingLauncher;
  readonly delivered: ReadonlySet<string>;
  /** Runs for which a dispatch started while another dispatch of the same run was still in flight. */
  readonly overlapped: ReadonlySet<string>;
  readonly outages: readonly number[];
  readonly undelivered: number;
}

/** Retryable domain errors are what SQS redelivers (and a cancel answers with 409); anything else is a defect. */
const isRetryable = (error: unknown): boolean => error instanceof DomainError && error.retryable;

/**
 * Two queued runs on a real store; every operation starts at once and the
 * scheduler picks the order of each store step and launch. Afterwards SQS
 * redelivers whatever failed retryably until it goes through.
 */
async function simulate(s: fc.Scheduler, ops: readonly Op[], outages: readonly number[]): Promise<Observed> {
  const clock = new ManualClock();
  const db = openDatabase(':memory:');
  try {
    const rawStore = new SqliteRunStore({ db, clock });
    const writes = new Map<string, Write[]>(RUN_IDS.map((id) => [id, []]));
    const store = scheduledStore(rawStore, s, writes);
    const rawTargets = new SqliteTargetStore({ db });
    const targets = scheduledTargets(rawTargets, s);
    const launcher = new RecordingLauncher('local');
    launcher.beforeLaunch = () => s.schedule(Promise.resolve(), 'launch');
    RUN_IDS.forEach((id, i) => {
      launcher.failuresFor.set(
        id,
        Array.from({ length: outages[i] ?? 0 }, () => new LauncherUnavailableError('outage')),
      );
    });
    const deps: AppDeps = {
      store,
      targets,
      dispatchQueue: new SqliteWorkQueue({ db, name: 'dispatch', visibilityTimeoutSeconds: 30, clock }),
      logs: { read: async () => ({ lines: [], nextCursor: '' }) },
      assets: {
        backend: 'local',
        locate: async (path) => ({ kind: 'file', path }),
        list: async () => [],
        put: async () => {
          throw new Error('dispatch never uploads');
        },
      },
      settings: loadSettings({ env: {} }),
      launchers: { local: launcher },
      relay: { available: true },
      clock,
      newId: () => 'unused',
      logger: silentLogger(),
    };
    await rawTargets.putTarget(vmTarget('vm-1'));
    for (const id of RUN_IDS) await createQueuedRun(rawStore, clock, { id });

    const delivered = new Set<string>();
    const pending = new Set<string>();
    const inFlight = new Map<string, number>();
    const overlapped = new Set<string>();
    const lastMessage = new Map<string, string>();
    let messages = 0;

    const dispatch = async (runId: string, messageId: string) => {
      delivered.add(runId);
      const concurrent = (inFlight.get(runId) ?? 0) + 1;
      inFlight.set(runId, concurrent);
      if (concurrent > 1) overlapped.add(runId);
      try {
        await dispatchRun(deps, runId, `dispatcher:${messageId}`);
      } catch (error) {
        if (!isRetryable(error)) throw error;
        pending.add(runId);
      } finally {
        inFlight.set(runId, (inFlight.get(runId) ?? 1) - 1);
      }
    };
    const perform = async (op: Op): Promise<void> => {
      const runId = RUN_IDS[op.run] as string;
      switch (op.type) {
        case 'deliver': {
          const messageId = `m-${++messages}`;
          lastMessage.set(runId, messageId);
          return dispatch(runId, messageId);
        }
        case 'redeliver':
          return dispatch(runId, lastMessage.get(runId) ?? `m-${++messages}`);
        case 'cancel':
          await cancelRun(deps, runId).catch((error: unknown) => {
            // A run that already ended answers 409: the client's cancel came too late, nothing changed.
            if (error instanceof InvalidTransitionError) return;
            if (!isRetryable(error)) throw error;
          });
          return;
        case 'finish':
          // The backend reports the task done (status sync).
          await settleRun(store, runId, (r) =>
            r.state === 'launched' ? transition(r, 'succeeded', clock.now(), { patch: { exitCode: 0 } }) : r,
          ).catch((error: unknown) => {
            if (!isRetryable(error)) throw error;
          });
          return;
      }
    };

    await s.waitFor(Promise.all(ops.map((op) => s.schedule(Promise.resolve(op)).then(perform))));

    launcher.beforeLaunch = undefined;
    const sequential: AppDeps = { ...deps, store: rawStore, targets: rawTargets };
    for (let round = 0; round < 5 && pending.size > 0; round++) {
      for (const runId of [...pending]) {
        pending.delete(runId);
        try {
          await dispatchRun(sequential, runId, `dispatcher:redrive-${round}`);
        } catch (error) {
          if (!isRetryable(error)) throw error;
          pending.add(runId);
        }
      }
    }

    const runs: Run[] = [];
    for (const id of RUN_IDS) runs.push((await rawStore.getRun(id)) as Run);
    return { runs, writes, launcher, delivered, overlapped, outages, undelivered: pending.size };
  } finally {
    db.close();
  }
}

const interleavings = fc.tuple(
  fc.scheduler(),
  fc.array(opArb, { minLength: 1, maxLength: 12 }),
  fc.tuple(fc.nat(2), fc.nat(2)),
);

describe('dispatchRun under redelivery (property)', () => {
  it('settles each run at most once, only moves versions forward and launches once unless a run was left dispatching', async () => {
    await fc.assert(
      fc.asyncProperty(interleavings, async ([s, ops, outages]) => {
        const seen = await simulate(s, ops, outages);

        expect(seen.undelivered).toBe(0);
        for (const [i, run] of seen.runs.entries()) {
          const terminalEntries = run.history.filter((h) => isTerminal(h.state));
          expect(terminalEntries.length).toBeLessThanOrEqual(1);
          if (terminalEntries.length === 1) expect(run.history.at(-1)).toEqual(terminalEntries[0]);
          expect(run.history.at(-1)?.state).toBe(run.state);

          const writes = seen.writes.get(run.id) ?? [];
          for (const [w, write] of writes.entries()) {
            if (w > 0) expect(write.version).toBeGreaterThan(writes[w - 1]?.version ?? 0);
            if (w < writes.length - 1) expect(isTerminal(write.state)).toBe(false);
          }

          const launches = seen.launcher.launchesFor(run.id);
          // One idempotency key per run, whatever the interleaving.
          expect(new Set(launches.map((l) => l.key)).size).toBeLessThanOrEqual(1);
          const leftDispatching = seen.overlapped.has(run.id) || (seen.outages[i] ?? 0) > 0;
          if (!leftDispatching) expect(launches.length).toBeLessThanOrEqual(1);

          if (seen.delivered.has(run.id)) {
            expect(['launched', 'succeeded', 'cancelled']).toContain(run.state);
          } else {
            expect(['queued', 'cancelled']).toContain(run.state);
            expect(launches).toHaveLength(0);
          }
        }
      }),
      { numRuns: 150 },
    );
  });

  it('leaves no started task behind: each is the run’s recorded task or was told to stop', async () => {
    await fc.assert(
      fc.asyncProperty(interleavings, async ([s, ops, outages]) => {
        const seen = await simulate(s, ops, outages);

        for (const run of seen.runs) {
          for (const handle of new Set(seen.launcher.tasks.values())) {
            if (!handle.startsWith(`fake:${run.id}#`)) continue;
            const stopped = seen.launcher.cancels.some((c) => c.handle === handle);
            expect({ handle, recorded: run.launch?.handle === handle, stopped }).not.toMatchObject({
              recorded: false,
              stopped: false,
            });
          }
        }
      }),
      { numRuns: 150 },
    );
  });
});
