import { describe, expect, it } from 'vitest';
import { newRun, type Run, transition } from '../../../shared/domain/run.ts';
import { runTimings } from '../../../shared/domain/run-timings.ts';

const T = (s: number) => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();
const queued = () =>
  newRun(
    { id: 'r1', kind: 'vm', targetId: 'vm-1', asset: 'a.yml', requestedBy: 'alice', timeoutSeconds: 60 },
    T(0),
  );

describe('runTimings', () => {
  it('records each stage and the durations between them', () => {
    let run: Run = queued();
    run = transition(run, 'dispatching', T(2));
    run = transition(run, 'launched', T(3));
    run = transition(run, 'running', T(7));
    run = transition(run, 'succeeded', T(20));

    expect(runTimings(run)).toEqual({
      queuedAt: T(0),
      claimedAt: T(2),
      launchedAt: T(3),
      runningAt: T(7),
      endedAt: T(20),
      queueWaitMs: 2000,
      launchLatencyMs: 1000,
      startLatencyMs: 7000,
      runTimeMs: 13000,
    });
  });

  it('has only what is known for a run still waiting', () => {
    expect(runTimings(queued())).toEqual({ queuedAt: T(0) });
  });

  it('counts the wait from the first claim when a run was put back and claimed again', () => {
    let run: Run = queued();
    run = transition(run, 'dispatching', T(1));
    run = transition(run, 'queued', T(5), { reason: 'dispatcher lost' });
    run = transition(run, 'dispatching', T(9));
    run = transition(run, 'launched', T(10));

    expect(runTimings(run)).toMatchObject({
      queuedAt: T(0),
      claimedAt: T(1),
      queueWaitMs: 1000,
      launchLatencyMs: 9000,
    });
  });

  it('measures the run time from launch when the run ended before anyone saw it running', () => {
    let run: Run = queued();
    run = transition(run, 'dispatching', T(1));
    run = transition(run, 'launched', T(2));
    run = transition(run, 'failed', T(4), { reason: 'exit 2' });

    expect(runTimings(run)).toMatchObject({ startLatencyMs: 2000, runTimeMs: 2000, endedAt: T(4) });
    expect(runTimings(run).notStartedReason).toBeUndefined();
  });

  it('says why a run that was never launched did not start', () => {
    const run = transition(queued(), 'refused', T(0), { reason: 'Ansible ECS runner is not configured' });

    expect(runTimings(run)).toEqual({
      queuedAt: T(0),
      endedAt: T(0),
      notStartedReason: 'Ansible ECS runner is not configured',
    });
  });

  it('never reports a negative duration when writers’ clocks disagree', () => {
    const run = transition(queued(), 'dispatching', '2024-12-31T23:59:59.990Z');

    expect(runTimings(run).queueWaitMs).toBe(0);
  });
});
