import { describe, expect, it } from 'vitest';
import {
  describeStoppedTask,
  ecsTaskStatus,
  type StoppedTaskFacts,
} from '../../../../shared/adapters/ecs/task-outcome.ts';

describe('describeStoppedTask', () => {
  // Reasons as ECS words them (Amazon ECS "stopped task errors" reference), and what a user reads.
  const cases: readonly [
    title: string,
    facts: StoppedTaskFacts,
    expected: ReturnType<typeof describeStoppedTask>,
  ][] = [
    [
      'a clean exit 0',
      {
        stopCode: 'EssentialContainerExited',
        stoppedReason: 'Essential container in task exited',
        exitCode: 0,
      },
      { succeeded: true, exitCode: 0 },
    ],
    [
      'a play that failed',
      {
        stopCode: 'EssentialContainerExited',
        stoppedReason: 'Essential container in task exited',
        exitCode: 2,
      },
      { succeeded: false, exitCode: 2, reason: 'the runner container exited with code 2' },
    ],
    [
      'an image that cannot be pulled',
      {
        stopCode: 'TaskFailedToStart',
        stoppedReason:
          'CannotPullContainerError: pull image manifest has been retried 5 time(s): failed to resolve ref docker.io/chrweav/nope:latest',
      },
      {
        succeeded: false,
        reason:
          'image pull failed: pull image manifest has been retried 5 time(s): failed to resolve ref docker.io/chrweav/nope:latest',
      },
    ],
    [
      'the pull error on the container rather than the task',
      {
        stopCode: 'TaskFailedToStart',
        stoppedReason: 'Task failed to start',
        containerReason: 'CannotPullContainerError: access denied',
      },
      { succeeded: false, reason: 'image pull failed: access denied' },
    ],
    [
      'secrets that cannot be fetched',
      {
        stopCode: 'TaskFailedToStart',
        stoppedReason:
          'ResourceInitializationError: unable to pull secrets or registry auth: execution resource retrieval failed',
      },
      {
        succeeded: false,
        reason:
          'the task could not be initialised (secrets, registry credentials, log driver or network): unable to pull secrets or registry auth: execution resource retrieval failed',
      },
    ],
    [
      'a container killed for memory',
      {
        stopCode: 'EssentialContainerExited',
        containerReason: 'OutOfMemoryError: Container killed due to memory usage',
        exitCode: 137,
      },
      { succeeded: false, exitCode: 137, reason: 'out of memory: Container killed due to memory usage' },
    ],
    [
      'a task that failed to start for another reason',
      {
        stopCode: 'TaskFailedToStart',
        stoppedReason: 'Timeout waiting for network interface provisioning to complete.',
      },
      {
        succeeded: false,
        reason: 'the task failed to start: Timeout waiting for network interface provisioning to complete.',
      },
    ],
    [
      'a spot interruption',
      { stopCode: 'SpotInterruption', stoppedReason: 'Your Spot Task was interrupted.', exitCode: 143 },
      {
        succeeded: false,
        exitCode: 143,
        reason:
          'Fargate Spot reclaimed the capacity (spot interruption): Your Spot Task was interrupted.; the runner container exited with code 143 (terminated by SIGTERM)',
      },
    ],
    [
      'a spot interruption whose container still exited 0',
      { stopCode: 'SpotInterruption', exitCode: 0 },
      {
        succeeded: false,
        exitCode: 0,
        reason:
          'Fargate Spot reclaimed the capacity (spot interruption); the runner container exited with code 0',
      },
    ],
    [
      'a stop on request without an exit code',
      { stopCode: 'UserInitiated', stoppedReason: 'remote-worker: run R1 was cancelled or timed out' },
      {
        succeeded: false,
        reason: 'the task was stopped on request: remote-worker: run R1 was cancelled or timed out',
      },
    ],
    [
      'the shim timing the run out',
      { stopCode: 'EssentialContainerExited', exitCode: 124 },
      {
        succeeded: false,
        exitCode: 124,
        reason: 'the runner container exited with code 124 (the run hit its timeout inside the task)',
      },
    ],
    [
      'a tool missing from the image',
      { stopCode: 'EssentialContainerExited', exitCode: 127 },
      {
        succeeded: false,
        exitCode: 127,
        reason: 'the runner container exited with code 127 (the tool could not be started)',
      },
    ],
    [
      'a host retired under the task',
      { stopCode: 'TerminationNotice', stoppedReason: 'Task stopped by user' },
      { succeeded: false, reason: "the task's host was retired (termination notice)" },
    ],
    [
      'a stop code ECS added after this table',
      { stopCode: 'SomethingNew', stoppedReason: 'because' },
      { succeeded: false, reason: 'the task stopped (SomethingNew): because' },
    ],
    [
      'nothing known at all',
      {},
      { succeeded: false, reason: 'the task stopped without an exit code or a reason' },
    ],
  ];

  it.each(cases)('explains %s', (_title, facts, expected) => {
    expect(describeStoppedTask(facts)).toEqual(expected);
  });

  it('keeps a long ECS reason to 500 characters', () => {
    const outcome = describeStoppedTask({ stoppedReason: `CannotPullContainerError: ${'x'.repeat(2000)}` });
    expect(outcome.reason).toHaveLength(500);
    expect(outcome.reason?.endsWith('…')).toBe(true);
  });
});

describe('ecsTaskStatus', () => {
  it('maps every documented lastStatus, marking the ones on the way to STOPPED as winding down', () => {
    const of = (lastStatus: string) => ecsTaskStatus({ lastStatus }, 'runner');

    expect(['PROVISIONING', 'PENDING', 'ACTIVATING'].map(of)).toEqual(
      Array(3).fill({ status: { state: 'pending' }, windingDown: false }),
    );
    expect(of('RUNNING')).toEqual({ status: { state: 'running' }, windingDown: false });
    expect(['DEACTIVATING', 'STOPPING', 'DEPROVISIONING'].map(of)).toEqual(
      Array(3).fill({ status: { state: 'running' }, windingDown: true }),
    );
    expect(of('SOMETHING_NEW')).toBeUndefined();
  });

  it('describes a stopped task from its runner container', () => {
    const stopped = ecsTaskStatus(
      {
        lastStatus: 'STOPPED',
        stopCode: 'EssentialContainerExited',
        containers: [
          { name: 'runner', exitCode: 0 },
          { name: 'sidecar', exitCode: 1 },
        ],
      },
      'runner',
    );
    const noContainer = ecsTaskStatus({ lastStatus: 'STOPPED', stopCode: 'TaskFailedToStart' }, 'runner');

    expect(stopped).toEqual({ status: { state: 'exited', exitCode: 0 }, windingDown: false });
    expect(noContainer).toEqual({
      status: { state: 'exited', reason: 'the task failed to start' },
      windingDown: false,
    });
  });
});
