import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type EcsTaskStateChangeEvent,
  ecsTaskStateChangePattern,
  makeEcsTaskStateChange,
} from '../../../functions/status-sync/ecs-task-state-change.ts';
import { openDatabase } from '../../../shared/adapters/sqlite/database.ts';
import { SqliteRunStore } from '../../../shared/adapters/sqlite/run-store.ts';
import { mutateRun } from '../../../shared/app/run-updates.ts';
import {
  amend,
  isTerminal,
  RUN_STATES,
  type Run,
  type RunState,
  transition,
} from '../../../shared/domain/run.ts';
import {
  createQueuedRun,
  ManualClock,
  markLaunched,
  RecordingLauncher,
  silentLogger,
} from '../app/harness.ts';

const CLUSTER_ARN = 'arn:aws:ecs:us-east-1:123456789012:cluster/remote-worker';
const TASK_ARN = 'arn:aws:ecs:us-east-1:123456789012:task/remote-worker/5b2a0c1e9d8f4a7b8c6d5e4f3a2b1c0d';
const HANDLE = `ecs:remote-worker/${TASK_ARN}`;

interface EventSpec {
  readonly lastStatus: string;
  readonly version: number;
  readonly exitCode?: number;
  readonly stopCode?: string;
  readonly stoppedReason?: string;
  readonly taskArn?: string;
  readonly attempt?: number;
  readonly runId?: string;
}

/** An EventBridge "ECS Task State Change" event as ECS sends it (fields we do not read trimmed). */
function ecsEvent(runId: string, spec: EventSpec): EcsTaskStateChangeEvent {
  const attempt = spec.attempt ?? 1;
  return {
    id: `evt-${spec.lastStatus}-${spec.version}`,
    version: '0',
    account: '123456789012',
    time: '2025-01-01T00:00:00Z',
    region: 'us-east-1',
    resources: [spec.taskArn ?? TASK_ARN],
    source: 'aws.ecs',
    'detail-type': 'ECS Task State Change',
    detail: {
      clusterArn: CLUSTER_ARN,
      taskArn: spec.taskArn ?? TASK_ARN,
      lastStatus: spec.lastStatus,
      desiredStatus: spec.lastStatus === 'STOPPED' ? 'STOPPED' : 'RUNNING',
      version: spec.version,
      startedBy: `rw/${spec.runId ?? runId}/${attempt}`,
      group: `rw:${spec.runId ?? runId}:${attempt}`,
      launchType: 'FARGATE',
      containers: [
        {
          name: 'runner',
          lastStatus: spec.lastStatus === 'STOPPED' ? 'STOPPED' : 'RUNNING',
          ...(spec.exitCode === undefined ? {} : { exitCode: spec.exitCode }),
        },
        // A sidecar whose exit code must not be taken for the run's.
        { name: 'log-router', exitCode: 0 },
      ],
      ...(spec.stopCode === undefined ? {} : { stopCode: spec.stopCode }),
      ...(spec.stoppedReason === undefined ? {} : { stoppedReason: spec.stoppedReason }),
    },
  };
}

/** How far along a run is, as DESIGN.md orders the states: the live ones in turn, then any terminal one. */
const PROGRESS: readonly RunState[] = ['queued', 'dispatching', 'launched', 'running'];
const RANK = Object.fromEntries(
  RUN_STATES.map((s) => [s, PROGRESS.includes(s) ? PROGRESS.indexOf(s) : PROGRESS.length]),
) as Record<RunState, number>;

function setup() {
  const clock = new ManualClock();
  const db = openDatabase(':memory:');
  const store = new SqliteRunStore({ db, clock });
  const launcher = new RecordingLauncher('ecs');
  const handle = makeEcsTaskStateChange({
    store,
    clock,
    logger: silentLogger(),
    launchers: { ecs: launcher },
    containerName: 'runner',
  });
  return { clock, db, store, launcher, handle };
}

describe('makeEcsTaskStateChange', () => {
  let t: ReturnType<typeof setup>;
  let run: Run;

  beforeEach(async () => {
    t = setup();
    run = await createQueuedRun(t.store, t.clock, { id: 'run-1' });
    run = await markLaunched(t.store, t.clock, run, { backend: 'ecs', handle: HANDLE });
  });
  afterEach(() => t.db.close());

  const deliver = (spec: EventSpec) => {
    t.clock.advance(1000);
    return t.handle(ecsEvent(run.id, spec));
  };
  const stored = async () => (await t.store.getRun(run.id))!;

  it('moves a launched run to running and keeps the event version in the handle', async () => {
    expect(await deliver({ lastStatus: 'RUNNING', version: 4 })).toBe('applied');

    expect(await stored()).toMatchObject({
      state: 'running',
      launch: { backend: 'ecs', handle: `${HANDLE}#v4` },
    });
  });

  it('ignores an older or repeated version and records a newer one that changes nothing', async () => {
    await deliver({ lastStatus: 'RUNNING', version: 4 });
    const running = await stored();

    expect(await deliver({ lastStatus: 'PENDING', version: 2 })).toBe('stale');
    expect(await deliver({ lastStatus: 'RUNNING', version: 4 })).toBe('stale');
    expect(await stored()).toEqual(running);

    expect(await deliver({ lastStatus: 'DEACTIVATING', version: 5 })).toBe('recorded');
    expect(await stored()).toMatchObject({ state: 'running', launch: { handle: `${HANDLE}#v5` } });
    expect(await deliver({ lastStatus: 'RUNNING', version: 4 })).toBe('stale');
  });

  it('settles a stopped task succeeded with exit code 0, and never changes it again', async () => {
    expect(
      await deliver({ lastStatus: 'STOPPED', version: 8, exitCode: 0, stopCode: 'EssentialContainerExited' }),
    ).toBe('applied');
    const done = await stored();
    expect(done).toMatchObject({ state: 'succeeded', exitCode: 0 });
    expect(done.history.map((h) => h.state)).toEqual(['queued', 'dispatching', 'launched', 'succeeded']);

    expect(await deliver({ lastStatus: 'RUNNING', version: 4 })).toBe('terminal');
    expect(await deliver({ lastStatus: 'STOPPED', version: 9, exitCode: 1 })).toBe('terminal');
    expect(await stored()).toEqual(done);
  });

  it('fails a run whose image could not be pulled, with the reason', async () => {
    await deliver({
      lastStatus: 'STOPPED',
      version: 3,
      stopCode: 'TaskFailedToStart',
      stoppedReason: 'CannotPullContainerError: pull access denied for chrweav/nope',
    });

    expect(await stored()).toMatchObject({
      state: 'failed',
      reason: 'Image pull failed: pull access denied for chrweav/nope',
    });
  });

  it('fails a run whose container exited non-zero, with its exit code', async () => {
    await deliver({ lastStatus: 'STOPPED', version: 8, exitCode: 2, stopCode: 'EssentialContainerExited' });

    expect(await stored()).toMatchObject({
      state: 'failed',
      exitCode: 2,
      reason: 'The runner container exited with code 2',
    });
  });

  it('cancels a run that had a cancel request when its task stops', async () => {
    await mutateRun(t.store, run.id, (r) => amend(r, t.clock.now(), { cancelRequested: true }));

    await deliver({ lastStatus: 'STOPPED', version: 8, exitCode: 143, stopCode: 'UserInitiated' });

    expect(await stored()).toMatchObject({ state: 'cancelled', exitCode: 143 });
  });

  it('moves the recorded task on without reading the run; a cancel request or a held account is read first', async () => {
    const reads: string[] = [];
    const getRun = t.store.getRun.bind(t.store);
    t.store.getRun = (id) => {
      reads.push(id);
      return getRun(id);
    };
    expect(await deliver({ lastStatus: 'RUNNING', version: 4 })).toBe('applied');
    expect(await deliver({ lastStatus: 'STOPPED', version: 8, exitCode: 0 })).toBe('applied');
    expect(reads).toEqual([]);
    expect(await stored()).toMatchObject({
      state: 'succeeded',
      exitCode: 0,
      launch: { handle: `${HANDLE}#v8` },
    });

    for (const [id, extra] of [
      ['run-cancel', { cancelRequested: true }],
      ['run-held', { heldAccount: 'acct-1' }],
    ] as const) {
      let other = await createQueuedRun(t.store, t.clock, { id });
      other = await markLaunched(t.store, t.clock, other, { backend: 'ecs', handle: HANDLE });
      await t.store.updateRun({ ...amend(other, t.clock.now(), {}), ...extra }, other.version);
      reads.length = 0;
      await t.handle(ecsEvent(id, { lastStatus: 'STOPPED', version: 8, exitCode: 143 }));
      expect({ id, reads }).toEqual({ id, reads: [id] });
      expect(await t.store.getRun(id)).toMatchObject({
        state: id === 'run-cancel' ? 'cancelled' : 'failed',
        exitCode: 143,
      });
    }
  });

  it('cleans up on STOPPED, also when the event is a duplicate, so a failed cleanup is retried', async () => {
    await deliver({ lastStatus: 'STOPPED', version: 8, exitCode: 0 });
    await deliver({ lastStatus: 'STOPPED', version: 8, exitCode: 0 });

    expect(t.launcher.cleanups).toEqual([
      { handle: `${HANDLE}#v8`, runId: run.id },
      { handle: `${HANDLE}#v8`, runId: run.id },
    ]);
  });

  it('adopts the task of a run the dispatcher left dispatching (crash between RunTask and the write)', async () => {
    const orphan = await createQueuedRun(t.store, t.clock, { id: 'run-2' });
    const claimed = transition(orphan, 'dispatching', t.clock.now(), {
      patch: { owner: 'dispatcher:dead', attempt: 1 },
    });
    await t.store.updateRun(
      amend(claimed, t.clock.now(), { launch: { backend: 'ecs', intentAt: t.clock.now() } }),
      orphan.version,
    );

    expect(await t.handle(ecsEvent('run-2', { lastStatus: 'RUNNING', version: 4 }))).toBe('applied');

    expect(await t.store.getRun('run-2')).toMatchObject({
      state: 'running',
      launch: { backend: 'ecs', handle: `${HANDLE}#v4` },
    });
  });

  it('ignores events of another attempt, another task, an unknown run, and tasks it did not start', async () => {
    const before = await stored();

    expect(await deliver({ lastStatus: 'STOPPED', version: 9, exitCode: 1, attempt: 2 })).toBe(
      'other_attempt',
    );
    expect(
      await deliver({
        lastStatus: 'STOPPED',
        version: 9,
        exitCode: 1,
        taskArn: `${TASK_ARN.slice(0, -4)}ffff`,
      }),
    ).toBe('other_task');
    expect(await deliver({ lastStatus: 'RUNNING', version: 4, runId: 'no-such-run' })).toBe('unknown_run');
    const foreign = ecsEvent(run.id, { lastStatus: 'STOPPED', version: 9 });
    expect(
      await t.handle({
        ...foreign,
        detail: { ...(foreign.detail as object), group: 'family:other', startedBy: 'ecs-svc/1' },
      }),
    ).toBe('not_ours');
    expect(await t.handle({ ...foreign, detail: { taskArn: 42 } })).toBe('malformed');

    expect(await stored()).toEqual(before);
    expect(t.launcher.cleanups).toEqual([]);
  });

  it('matches only our cluster and groups in its EventBridge pattern', () => {
    expect(ecsTaskStateChangePattern(CLUSTER_ARN)).toEqual({
      source: ['aws.ecs'],
      'detail-type': ['ECS Task State Change'],
      detail: { clusterArn: [CLUSTER_ARN], group: [{ prefix: 'rw:' }] },
    });
  });
});

/** One task's life as ECS reports it, versions increasing. */
const LIVES = {
  succeeded: [
    { lastStatus: 'PROVISIONING', version: 1 },
    { lastStatus: 'PENDING', version: 2 },
    { lastStatus: 'ACTIVATING', version: 3 },
    { lastStatus: 'RUNNING', version: 4 },
    { lastStatus: 'DEACTIVATING', version: 5 },
    { lastStatus: 'STOPPING', version: 6 },
    { lastStatus: 'DEPROVISIONING', version: 7 },
    { lastStatus: 'STOPPED', version: 8, exitCode: 0, stopCode: 'EssentialContainerExited' },
  ],
  failed: [
    { lastStatus: 'PROVISIONING', version: 1 },
    { lastStatus: 'PENDING', version: 2 },
    { lastStatus: 'RUNNING', version: 3 },
    { lastStatus: 'DEACTIVATING', version: 4 },
    { lastStatus: 'STOPPED', version: 5, exitCode: 2, stopCode: 'EssentialContainerExited' },
  ],
  neverStarted: [
    { lastStatus: 'PROVISIONING', version: 1 },
    { lastStatus: 'PENDING', version: 2 },
    { lastStatus: 'DEPROVISIONING', version: 3 },
    {
      lastStatus: 'STOPPED',
      version: 4,
      stopCode: 'TaskFailedToStart',
      stoppedReason: 'CannotPullContainerError: not found',
    },
  ],
} as const satisfies Record<string, readonly EventSpec[]>;

describe('makeEcsTaskStateChange under at-least-once, out-of-order delivery', () => {
  const scenario = fc
    .record({
      life: fc.constantFrom(...(Object.keys(LIVES) as (keyof typeof LIVES)[])),
      // Each event delivered 1–3 times, in any order.
      copies: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 8, maxLength: 8 }),
      seed: fc.array(fc.nat(), { minLength: 24, maxLength: 24 }),
      cancelRequested: fc.boolean(),
      // The dispatcher died between RunTask and recording the handle.
      startDispatching: fc.boolean(),
    })
    .map(({ life, copies, seed, cancelRequested, startDispatching }) => {
      const events: EventSpec[] = LIVES[life].flatMap((e, i) =>
        Array.from({ length: copies[i] ?? 1 }, () => e),
      );
      // Fisher–Yates with the generated numbers, so fast-check can shrink the order.
      for (let i = events.length - 1; i > 0; i--) {
        const j = (seed[i % seed.length] ?? 0) % (i + 1);
        [events[i], events[j]] = [events[j]!, events[i]!];
      }
      return { life, events, cancelRequested, startDispatching };
    });

  it('never moves a run backwards or out of a terminal state, and ends where the task ended', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ life, events, cancelRequested, startDispatching }) => {
        const t = setup();
        try {
          let run = await createQueuedRun(t.store, t.clock, { id: 'run-p' });
          if (startDispatching) {
            const claimed = transition(run, 'dispatching', t.clock.now(), {
              patch: { owner: 'd:dead', attempt: 1 },
            });
            run = await t.store.updateRun(
              amend(claimed, t.clock.now(), { launch: { backend: 'ecs', intentAt: t.clock.now() } }),
              run.version,
            );
          } else {
            run = await markLaunched(t.store, t.clock, run, { backend: 'ecs', handle: HANDLE });
          }
          if (cancelRequested) {
            run = await mutateRun(t.store, run.id, (r) => amend(r, t.clock.now(), { cancelRequested: true }));
          }

          let previous = run;
          let firstTerminal: Run | undefined;
          for (const event of events) {
            t.clock.advance(10);
            await t.handle(ecsEvent(run.id, event));
            const now = (await t.store.getRun(run.id))!;
            expect(RANK[now.state]).toBeGreaterThanOrEqual(RANK[previous.state]);
            if (firstTerminal !== undefined) expect(now).toEqual(firstTerminal);
            else if (isTerminal(now.state)) firstTerminal = now;
            previous = now;
          }

          const final = (await t.store.getRun(run.id))!;
          const expected = life === 'succeeded' ? 'succeeded' : cancelRequested ? 'cancelled' : 'failed';
          expect(final.state).toBe(expected);
          expect(final.launch?.handle?.startsWith(HANDLE)).toBe(true);
          // Every recorded move was forward.
          const ranks = final.history.map((h) => RANK[h.state]);
          expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
          if (life === 'neverStarted' && !cancelRequested) {
            expect(final.reason).toBe('Image pull failed: not found');
          }
          if (life === 'failed') expect(final.exitCode).toBe(2);
        } finally {
          t.db.close();
        }
      }),
      { numRuns: 150 },
    );
  });
});
