import { describe, expect, it } from 'vitest';
import {
  decideTaskEvent,
  isRecordedTask,
  parseTaskEvent,
  type TaskEventDetail,
  taskEventHandle,
  taskEventStatus,
} from '../../../../shared/adapters/ecs/task-event.ts';
import { newRun, type Run, transition } from '../../../../shared/domain/run.ts';

const CLUSTER_ARN = 'arn:aws:ecs:us-east-1:123456789012:cluster/remote-worker';
const TASK_ARN = 'arn:aws:ecs:us-east-1:123456789012:task/remote-worker/5b2a0c1e9d8f4a7b8c6d5e4f3a2b1c0d';
const T0 = '2025-01-01T00:00:00.000Z';

const detail = (overrides: Partial<TaskEventDetail> = {}): TaskEventDetail => ({
  taskArn: TASK_ARN,
  clusterArn: CLUSTER_ARN,
  lastStatus: 'RUNNING',
  group: 'rw:run-1:1',
  ...overrides,
});

/** A run of the ECS runner in `state`, with `handle` recorded when given. */
function ecsRun(state: 'dispatching' | 'launched' | 'failed', handle?: string, attempt = 1): Run {
  const draft = newRun(
    { id: 'run-1', kind: 'vm', targetId: 'vm-1', asset: 'a.yml', requestedBy: 'alice', timeoutSeconds: 60 },
    T0,
  );
  const launch =
    handle === undefined
      ? { backend: 'ecs' as const, intentAt: T0 }
      : { backend: 'ecs' as const, intentAt: T0, handle };
  const dispatching = transition(draft, 'dispatching', T0, {
    patch: { attempt, owner: 'dispatcher:test', runner: 'ecs', image: 'img', launch },
  });
  if (state === 'dispatching') return dispatching;
  const launched = transition(dispatching, 'launched', T0);
  return state === 'launched' ? launched : transition(launched, 'failed', T0);
}

describe('parseTaskEvent', () => {
  it('finds the run from the group, and from startedBy when there is no group', () => {
    const byGroup = parseTaskEvent(detail());
    const byStartedBy = parseTaskEvent({ ...detail(), group: undefined, startedBy: 'rw/run-2/3' });

    expect(byGroup.ok && byGroup.owner).toEqual({ runId: 'run-1', attempt: 1 });
    expect(byStartedBy.ok && byStartedBy.owner).toEqual({ runId: 'run-2', attempt: 3 });
  });

  it('refuses a detail without the fields it reads, and has no owner for a task not ours', () => {
    const malformed = parseTaskEvent({ taskArn: TASK_ARN });
    const foreign = parseTaskEvent({ ...detail(), group: 'service:web' });

    expect(malformed.ok).toBe(false);
    expect(!malformed.ok && malformed.issues.map((i) => i.path.join('.'))).toEqual(
      expect.arrayContaining(['clusterArn', 'lastStatus']),
    );
    expect(foreign.ok && foreign.owner).toBeUndefined();
  });
});

describe('taskEventStatus', () => {
  it('maps lastStatus as the launcher does, saying nothing for a task winding down or an unknown status', () => {
    const of = (lastStatus: string) => taskEventStatus(detail({ lastStatus }), 'runner');

    expect(['PROVISIONING', 'PENDING', 'ACTIVATING'].map(of)).toEqual(Array(3).fill({ state: 'pending' }));
    expect(of('RUNNING')).toEqual({ state: 'running' });
    expect(['DEACTIVATING', 'STOPPING', 'DEPROVISIONING', 'SOMETHING_NEW'].map(of)).toEqual(
      Array(4).fill(undefined),
    );
  });

  it('takes the exit code of the runner container, not of a sidecar', () => {
    const stopped = detail({
      lastStatus: 'STOPPED',
      stopCode: 'EssentialContainerExited',
      containers: [
        { name: 'log-router', exitCode: 0 },
        { name: 'runner', exitCode: 2 },
      ],
    });

    expect(taskEventStatus(stopped, 'runner')).toEqual({
      state: 'exited',
      exitCode: 2,
      reason: 'the runner container exited with code 2',
    });
  });
});

describe('decideTaskEvent', () => {
  const owner = { runId: 'run-1', attempt: 1 };
  const recorded = `ecs:remote-worker/${TASK_ARN}#v5`;

  it('applies a newer event of the recorded task, and calls an older or equal one stale', () => {
    expect(decideTaskEvent(ecsRun('launched', recorded), owner, detail({ version: 6 }))).toBe('applied');
    expect(decideTaskEvent(ecsRun('launched', recorded), owner, detail({ version: 5 }))).toBe('stale');
    expect(decideTaskEvent(ecsRun('launched', recorded), owner, detail({ version: 4 }))).toBe('stale');
  });

  it('lets only a run being dispatched adopt a task it never recorded', () => {
    expect(decideTaskEvent(ecsRun('dispatching'), owner, detail())).toBe('applied');
    expect(decideTaskEvent(ecsRun('launched'), owner, detail())).toBe('other_task');
  });

  it('ignores events of another attempt, another task, or a run already over', () => {
    const otherTask = detail({ taskArn: `${TASK_ARN.slice(0, -1)}e` });

    expect(decideTaskEvent(ecsRun('launched', recorded, 2), owner, detail())).toBe('other_attempt');
    expect(decideTaskEvent(ecsRun('launched', recorded), owner, otherTask)).toBe('other_task');
    expect(decideTaskEvent(ecsRun('failed', recorded), owner, detail())).toBe('terminal');
  });
});

describe('taskEventHandle and isRecordedTask', () => {
  it('records the event version in the handle, and recognises the recorded task', () => {
    expect(taskEventHandle(detail({ version: 7 }))).toEqual({
      cluster: CLUSTER_ARN,
      taskArn: TASK_ARN,
      version: 7,
    });
    expect(taskEventHandle(detail())).toEqual({ cluster: CLUSTER_ARN, taskArn: TASK_ARN });
    expect(isRecordedTask(ecsRun('launched', `ecs:remote-worker/${TASK_ARN}`), detail())).toBe(true);
    expect(isRecordedTask(ecsRun('launched'), detail())).toBe(false);
  });
});
