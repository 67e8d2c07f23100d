import { deadlineOf, type Run, type RunState } from '../../shared/domain/run.ts';
import { SHIM_PREFIX } from '../../shared/domain/shim-protocol.ts';
import type { ExecutionResult, RunningExecution } from '../../shared/ports/executor.ts';
import type { RelayAgentOptions } from './agent-options.ts';
import type { CancelSource } from './cancel-watch.ts';
import type { LogShipper } from './log-shipper.ts';

type StopReason = 'cancelled' | 'timed_out';

/** How a run ends: its final state, the reason recorded with it, and the task's exit code when it has one. */
export interface TaskEnd {
  readonly state: RunState;
  readonly reason: string | undefined;
  readonly exitCode: number | undefined;
}

/**
 * Watch a running task until it ends: a cancel request (or the run ended
 * elsewhere), seen by the relay's one cancel reader for all its runs
 * (cancel-watch.ts), or the run's deadline stops it with `killGraceMs` of
 * grace; then answer how the run ends.
 *
 * @example
 * const { state, reason, exitCode } = await watchTask(options, run, execution, shipper, cancels);
 */
export async function watchTask(
  o: Pick<RelayAgentOptions, 'clock' | 'logger' | 'killGraceMs'>,
  run: Run,
  execution: RunningExecution,
  shipper: LogShipper,
  cancels: CancelSource,
): Promise<TaskEnd> {
  let stopReason: StopReason | undefined;
  const graceMs = o.killGraceMs ?? 10_000;
  const stop = (why: StopReason) => {
    if (stopReason !== undefined) return;
    stopReason = why;
    shipper.system(
      why === 'cancelled'
        ? `${SHIM_PREFIX}cancel requested; stopping the task`
        : `${SHIM_PREFIX}timed out; stopping the task`,
    );
    execution
      .kill(graceMs)
      .catch((error: unknown) => o.logger.error('relay: kill failed', { error: error as Error }));
  };
  const deadline = deadlineOf(run) - o.clock.nowMs();
  const deadlineTimer = setTimeout(() => stop('timed_out'), Math.max(0, deadline));
  const unwatch = cancels.watch(run.id, () => stop('cancelled'));

  let result: ExecutionResult;
  try {
    result = await execution.done;
  } finally {
    clearTimeout(deadlineTimer);
    unwatch();
  }
  const [state, reason] = taskOutcome(result, stopReason, shipper.lastProblem, run.timeoutSeconds);
  return { state, reason, exitCode: result.exitCode };
}

/** The run's final state and reason from the task's result, why the relay stopped it, and its last problem line. */
export function taskOutcome(
  result: ExecutionResult,
  stopReason: StopReason | undefined,
  lastProblem: string | undefined,
  timeoutSeconds: number,
): [RunState, string | undefined] {
  if (stopReason === 'cancelled') return ['cancelled', 'Cancelled while running; the task was stopped'];
  if (stopReason === 'timed_out')
    return ['timed_out', `Still running after its ${timeoutSeconds} s timeout; stopped`];
  if (result.lost !== undefined) return ['failed', result.lost];
  if (result.exitCode === 0) return ['succeeded', undefined];
  const how =
    result.exitCode === undefined
      ? `was killed by ${result.signal ?? 'a signal'}`
      : `exited with code ${result.exitCode}`;
  return ['failed', lastProblem === undefined ? `The task ${how}` : `The task ${how}: ${lastProblem}`];
}
