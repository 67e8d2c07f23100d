import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BackendPoller, pollerOptionsFrom } from '../../../shared/app/poll-backends.ts';
import { loadSettings } from '../../../shared/config/settings.ts';
import { LauncherUnavailableError } from '../../../shared/domain/errors.ts';
import { isTerminal, type Run } from '../../../shared/domain/run.ts';
import type { BackendStatus } from '../../../shared/ports/launcher.ts';
import {
  createQueuedRun,
  makeTestApp,
  markLaunched,
  RecordingLauncher,
  type TestApp,
  vmTarget,
} from './harness.ts';

/** A launcher whose answers the test scripts: a status per call, or an error to throw. */
class ScriptedLauncher extends RecordingLauncher {
  readonly answers: (BackendStatus | Error)[] = [];
  statusCalls = 0;
  override async status(): Promise<BackendStatus> {
    this.statusCalls++;
    const next = this.answers.length > 1 ? this.answers.shift() : this.answers[0];
    if (next === undefined) return { state: 'running' };
    if (next instanceof Error) throw next;
    return next;
  }
}

const throttled = () => new LauncherUnavailableError('ACI get failed, will retry (429 TooManyRequests)');

describe('BackendPoller (ACI, Cloud Run, Kubernetes)', () => {
  let app: TestApp;
  let aci: ScriptedLauncher;
  let ecs: ScriptedLauncher;
  let poller: BackendPoller;

  const launchedRun = async (id: string, backend: 'aci' | 'ecs' = 'aci'): Promise<Run> => {
    const run = await createQueuedRun(app.store, app.clock, { id });
    return markLaunched(app.store, app.clock, run, { backend, handle: `${backend}:rg/${id}` });
  };
  const stored = async (id: string): Promise<Run> => {
    const run = await app.store.getRun(id);
    if (run === undefined) throw new Error(`no run ${id}`);
    return run;
  };

  beforeEach(async () => {
    aci = new ScriptedLauncher('aci');
    ecs = new ScriptedLauncher('ecs');
    app = makeTestApp({ launchers: () => ({ aci, ecs }) });
    await app.targets.putTarget(vmTarget('vm-1'));
    poller = new BackendPoller(app.deps, {
      intervalSeconds: 3,
      statusUnknownGraceSeconds: 300,
      missingGraceSeconds: 120,
      cancelGraceSeconds: 30,
    });
  });
  afterEach(() => app.close());

  it('settles a polled run from what its backend says, and leaves ECS runs to the events', async () => {
    await launchedRun('run-a');
    await launchedRun('run-e', 'ecs');
    aci.answers.push({ state: 'running' });

    await poller.sweep();
    expect((await stored('run-a')).state).toBe('running');
    expect(ecs.statusCalls).toBe(0);

    aci.answers.splice(0, aci.answers.length, { state: 'exited', exitCode: 2 });
    app.clock.advance(3000);
    const report = await poller.sweep();

    const run = await stored('run-a');
    expect(report.settled).toEqual(['run-a']);
    expect(run).toMatchObject({ state: 'failed', exitCode: 2, reason: 'The task exited with code 2' });
    expect(aci.cleanups).toEqual([{ handle: 'aci:rg/run-a', runId: 'run-a' }]);
    expect((await stored('run-e')).state).toBe('launched');
  });

  it('backs off exponentially while the backend throttles, and resumes when it answers', async () => {
    await launchedRun('run-a');
    aci.answers.push(throttled());

    await poller.sweep();
    expect(aci.statusCalls).toBe(1);
    expect(poller.backoffSeconds('run-a')).toBe(6);
    expect((await stored('run-a')).statusUnknownSince).toBe(app.clock.now());

    // Within the pause nothing is asked; after it, one call and a longer pause.
    app.clock.advance(3000);
    await poller.sweep();
    expect(aci.statusCalls).toBe(1);
    app.clock.advance(3001);
    await poller.sweep();
    expect(aci.statusCalls).toBe(2);
    expect(poller.backoffSeconds('run-a')).toBe(12);

    aci.answers.splice(0, aci.answers.length, { state: 'running' });
    app.clock.advance(12_001);
    await poller.sweep();
    const run = await stored('run-a');
    expect(run.state).toBe('running');
    expect(run.statusUnknownSince).toBeUndefined();
    expect(poller.backoffSeconds('run-a')).toBe(0);
  });

  it('fails a run whose backend stays silent past status_unknown grace, naming the last error', async () => {
    await launchedRun('run-a');
    aci.answers.push(throttled());
    const started = app.clock.now();

    for (let elapsed = 0; elapsed <= 300_000; elapsed += 20_000) {
      await poller.sweep();
      app.clock.advance(20_000);
      expect((await stored('run-a')).state).toBe('launched');
    }
    app.clock.advance(60_000);
    await poller.sweep();

    const run = await stored('run-a');
    expect(run.state).toBe('failed');
    expect(run.reason).toContain(`has not reported on the task since ${started}`);
    expect(run.reason).toContain('429 TooManyRequests');
    expect(aci.cleanups.map((c) => c.runId)).toEqual(['run-a']);
  });

  it('forwards a cancel request to the backend with the cleanup grace', async () => {
    const run = await launchedRun('run-a');
    await app.store.updateRun({ ...run, cancelRequested: true, version: run.version + 1 }, run.version);
    aci.answers.push({ state: 'running' });

    const report = await poller.sweep();

    expect(report.stopped).toEqual(['run-a']);
    expect(aci.cancels).toEqual([{ handle: 'aci:rg/run-a', runId: 'run-a', graceSeconds: 30 }]);
  });

  it('never moves a run backwards or out of a terminal state, whatever the backend answers', async () => {
    const statuses: fc.Arbitrary<BackendStatus | Error> = fc.oneof(
      fc.constant<BackendStatus>({ state: 'pending' }),
      fc.constant<BackendStatus>({ state: 'running' }),
      fc.constant<BackendStatus>({ state: 'missing', reason: 'gone' }),
      fc.integer({ min: 0, max: 3 }).map<BackendStatus>((exitCode) => ({ state: 'exited', exitCode })),
      fc.constant(throttled()),
    );
    const rank = { launched: 0, running: 1 } as Record<string, number>;
    await fc.assert(
      fc.asyncProperty(fc.array(statuses, { minLength: 1, maxLength: 12 }), async (answers) => {
        app.close();
        aci = new ScriptedLauncher('aci');
        app = makeTestApp({ launchers: () => ({ aci }) });
        await app.targets.putTarget(vmTarget('vm-1'));
        poller = new BackendPoller(app.deps, {
          intervalSeconds: 3,
          statusUnknownGraceSeconds: 30,
          missingGraceSeconds: 10,
          cancelGraceSeconds: 5,
        });
        await launchedRun('run-a');
        let previous = await stored('run-a');
        for (const answer of answers) {
          aci.answers.splice(0, aci.answers.length, answer);
          app.clock.advance(61_000);
          await poller.sweep();
          const now = await stored('run-a');
          if (isTerminal(previous.state)) expect(now).toEqual(previous);
          else if (!isTerminal(now.state))
            expect(rank[now.state]).toBeGreaterThanOrEqual(rank[previous.state] ?? 0);
          previous = now;
        }
      }),
      { numRuns: 60 },
    );
  });

  it('runUntil sweeps at the interval until the deadline', async () => {
    await launchedRun('run-a');
    const sleeps: number[] = [];
    const sweeps = await poller.runUntil(app.clock.nowMs() + 10_000, async (ms) => {
      sleeps.push(ms);
      app.clock.advance(ms);
    });
    expect(sweeps).toBe(3);
    expect(sleeps).toEqual([3000, 3000, 3000]);
    expect(aci.statusCalls).toBe(3);
  });

  it('takes its options from the settings, waiting ten sweeps and at least two minutes for a missing task', () => {
    expect(pollerOptionsFrom(loadSettings({ env: {} }))).toEqual({
      intervalSeconds: 3,
      statusUnknownGraceSeconds: 300,
      missingGraceSeconds: 120,
      cancelGraceSeconds: 30,
    });
    expect(
      pollerOptionsFrom(loadSettings({ env: { POLL_INTERVAL_SECONDS: '30', CLEANUP_GRACE_SECONDS: '5' } })),
    ).toMatchObject({ intervalSeconds: 30, missingGraceSeconds: 300, cancelGraceSeconds: 5 });
  });
});
