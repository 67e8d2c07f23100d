import type { RunAttempt } from '../../shared/adapters/ecs/handle.ts';
import { formatEcsHandle } from '../../shared/adapters/ecs/handle.ts';
import {
  decideTaskEvent,
  ECS_TASK_STATE_CHANGE,
  type EcsEventOutcome,
  type EcsTaskStateChangeEvent,
  isRecordedTask,
  parseTaskEvent,
  type TaskEventDetail,
  taskEventHandle,
  taskEventStatus,
} from '../../shared/adapters/ecs/task-event.ts';
import { endOnBackend, endRun } from '../../shared/app/credentials.ts';
import type { AppDeps } from '../../shared/app/deps.ts';
import { applyBackendStatus, backendAdvance } from '../../shared/app/sync-backends.ts';
import { lambdaHandler } from '../../shared/composition/lambda.ts';
import { DomainError, NotFoundError } from '../../shared/domain/errors.ts';
import { amend, isTerminal, type Run } from '../../shared/domain/run.ts';
import type { BackendStatus } from '../../shared/ports/launcher.ts';

/**
 * The EventBridge rule for this handler: our cluster's task events, only for
 * tasks the ECS launcher started (their group is `rw:<runId>:<attempt>`).
 *
 * @example
 * new Rule(this, 'EcsTaskEvents', { eventPattern: ecsTaskStateChangePattern(cluster.clusterArn) });
 */
export const ecsTaskStateChangePattern = (clusterArn: string) => ({
  source: ['aws.ecs'],
  'detail-type': [ECS_TASK_STATE_CHANGE],
  detail: { clusterArn: [clusterArn], group: [{ prefix: 'rw:' }] },
});

export type { EcsEventOutcome, EcsTaskStateChangeEvent };
export { ECS_TASK_STATE_CHANGE };

export type EcsTaskStateChangeDeps = Pick<
  AppDeps,
  'store' | 'clock' | 'logger' | 'launchers' | 'credentials' | 'runSecrets'
> & {
  /** The runner container in the task definition: its exit code is the run's. */
  readonly containerName: string;
};

/**
 * EventBridge "ECS Task State Change" → run state. Events come at least once
 * and out of order, so:
 * - the run is found from the task's group / startedBy and must be on the
 *   same attempt and (once recorded) the same task;
 * - the highest `detail.version` applied is kept in the run's launch handle
 *   (`…#v<version>`); an event at or below it is ignored;
 * - a RUNNING or STOPPED event of the recorded task is first offered as one
 *   conditional write with no read (RunStore.advanceRun, the move
 *   `backendAdvance` names), which applies only where reading could not
 *   decide otherwise: the same attempt and task at a lower version, no
 *   cancel request, nothing to release at the run's end;
 * - any other event, or one the advance did not apply to, reads the run: the
 *   move goes through `applyBackendStatus` inside `settleRun`: never
 *   backwards, never out of a terminal state, cancelled when the run had a
 *   cancel request;
 * - a STOPPED task's leftovers (a per-run task definition) are cleaned up,
 *   also on a duplicate, so a failed cleanup is retried with the event.
 * A task the dispatcher started but crashed before recording is adopted here.
 *
 * @example
 * export const handler = makeEcsTaskStateChange({ store, clock, logger, launchers, containerName: 'runner' });
 */
export function makeEcsTaskStateChange(
  deps: EcsTaskStateChangeDeps,
): (event: EcsTaskStateChangeEvent) => Promise<EcsEventOutcome> {
  const log = deps.logger;
  return async (event) => {
    const parsed = parseTaskEvent(event.detail);
    if (!parsed.ok) {
      log.error('ecs event: malformed detail ignored', { eventId: event.id, issues: parsed.issues });
      return 'malformed';
    }
    const { detail, owner } = parsed;
    if (owner === undefined) return 'not_ours';
    const status = taskEventStatus(detail, deps.containerName);
    const version = detail.version;

    // The common case, one conditional write and no read: the recorded task moves on (advanceRun).
    const advanced = await advanceFromEvent(deps, owner, detail, status);
    const decided =
      advanced === undefined
        ? await readAndSettle(deps, owner, detail, status)
        : { settled: advanced, outcome: 'applied' as const };
    if (decided === undefined) {
      log.warn('ecs event for an unknown run ignored', { runId: owner.runId, taskArn: detail.taskArn });
      return 'unknown_run';
    }
    const { settled, outcome } = decided;

    if (detail.lastStatus === 'STOPPED' && isTerminal(settled.state) && isRecordedTask(settled, detail)) {
      await cleanup(deps, settled);
    }
    log.info('ecs event', {
      runId: owner.runId,
      taskArn: detail.taskArn,
      lastStatus: detail.lastStatus,
      version,
      outcome,
      state: settled.state,
    });
    return outcome;
  };
}

/**
 * The event decided on the run as read (endRun: a stopped task's account is
 * checked in before the run's end is recorded). Undefined: no such run.
 */
async function readAndSettle(
  deps: EcsTaskStateChangeDeps,
  owner: RunAttempt,
  detail: TaskEventDetail,
  status: BackendStatus | undefined,
): Promise<{ settled: Run; outcome: EcsEventOutcome } | undefined> {
  // Set by the change function (the last call counts: it may be retried). settleRun does not
  // call it at all for a terminal run.
  const result: { outcome: EcsEventOutcome } = { outcome: 'terminal' };
  try {
    const settled = await endRun(deps, owner.runId, (run) => {
      result.outcome = decideTaskEvent(run, owner, detail);
      if (result.outcome !== 'applied') return run;
      const launch = {
        backend: 'ecs' as const,
        intentAt: run.launch?.intentAt ?? deps.clock.now(),
        handle: formatEcsHandle(taskEventHandle(detail)),
      };
      const next = status === undefined ? run : applyBackendStatus(run, status, deps.clock.now(), launch);
      if (next !== run) return next;
      // No move, but a newer version: remember it so an older event cannot pass for news.
      if (launch.handle === run.launch?.handle) {
        result.outcome = 'stale';
        return run;
      }
      result.outcome = 'recorded';
      return amend(run, deps.clock.now(), { launch });
    });
    return { settled, outcome: result.outcome };
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/**
 * The event as a blind advance (RunStore.advanceRun), when it reports a move
 * (RUNNING, or STOPPED with its exit) with a version: the store applies it
 * only to a run on the event's attempt with the event's task recorded at a
 * lower version, no cancel request and nothing to release at its end — the
 * run endRun would settle exactly so. Undefined when it did not apply (a
 * duplicate, an out-of-order or adopting event, a run holding an account):
 * the caller reads the run and decides as before.
 */
async function advanceFromEvent(
  deps: EcsTaskStateChangeDeps,
  owner: RunAttempt,
  detail: TaskEventDetail,
  status: BackendStatus | undefined,
): Promise<Run | undefined> {
  const move = status === undefined ? undefined : backendAdvance(status);
  if (move === undefined || detail.version === undefined) return undefined;
  const task = formatEcsHandle({ cluster: detail.clusterArn, taskArn: detail.taskArn });
  const got = await deps.store.advanceRun(owner.runId, {
    attempt: owner.attempt,
    task,
    order: detail.version,
    at: deps.clock.now(),
    ...move,
  });
  return got.advanced ? got.run : undefined;
}

async function cleanup(deps: EcsTaskStateChangeDeps, run: Run): Promise<void> {
  const launcher = deps.launchers.ecs;
  const handle = run.launch?.handle;
  if (launcher === undefined || handle === undefined) return;
  try {
    await endOnBackend(deps, launcher, handle, run);
  } catch (error) {
    // Retryable: throw, so EventBridge delivers the event again and the cleanup is retried.
    if (error instanceof DomainError && !error.retryable) {
      deps.logger.error('ecs event: cleanup refused', { runId: run.id, error: error as Error });
      return;
    }
    throw error;
  }
}

/** The EventBridge rule's target; the runner container is named by ECS_CONTAINER_NAME (default `runner`). */
export const handler = lambdaHandler((deps) =>
  makeEcsTaskStateChange({ ...deps, containerName: deps.ecsContainerName }),
);
