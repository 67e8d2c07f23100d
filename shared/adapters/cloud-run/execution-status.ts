import type { protos } from '@google-cloud/run';
import { exitCodeMeaning } from '../../domain/exit-codes.ts';
import type { BackendStatus } from '../../ports/launcher.ts';

/** The likely cause of a SIGKILL on this backend. */
const SIGKILL = 'killed by SIGKILL, often out of memory or the task timeout';

type Execution = protos.google.cloud.run.v2.IExecution;
type Condition = protos.google.cloud.run.v2.ICondition;
type Task = protos.google.cloud.run.v2.ITask;

/** Longest reason we keep: Cloud Run condition messages can be long. */
const MAX_REASON = 500;

/** Condition.State by number, for answers that arrive with numeric enums. */
const CONDITION_STATES = [
  'STATE_UNSPECIFIED',
  'CONDITION_PENDING',
  'CONDITION_RECONCILING',
  'CONDITION_FAILED',
  'CONDITION_SUCCEEDED',
] as const;
/** Condition.ExecutionReason by number. */
const EXECUTION_REASONS = [
  'EXECUTION_REASON_UNDEFINED',
  'JOB_STATUS_SERVICE_POLLING_ERROR',
  'NON_ZERO_EXIT_CODE',
  'CANCELLED',
  'CANCELLING',
  'DELETED',
  'DELAYED_START_PENDING',
] as const;

const nameOf = (value: unknown, names: readonly string[]): string | undefined =>
  typeof value === 'number' ? names[value] : typeof value === 'string' ? value : undefined;

const count = (n: number | null | undefined): number => (typeof n === 'number' ? n : Number(n ?? 0));

/** A Timestamp that is set (the SDK fills unset ones with null, or zero seconds). */
const isSet = (t: protos.google.protobuf.ITimestamp | null | undefined): boolean =>
  t !== null && t !== undefined && (Number(t.seconds ?? 0) > 0 || Number(t.nanos ?? 0) > 0);

/** The execution's `Completed` condition, which holds the verdict once it is terminal. */
export function completedCondition(execution: Execution): Condition | undefined {
  return (execution.conditions ?? []).find((c) => c.type === 'Completed');
}

export function isFinished(execution: Execution): boolean {
  const state = nameOf(completedCondition(execution)?.state, CONDITION_STATES);
  return isSet(execution.completionTime) || state === 'CONDITION_SUCCEEDED' || state === 'CONDITION_FAILED';
}

export function isCancelled(execution: Execution): boolean {
  const reason = nameOf(completedCondition(execution)?.executionReason, EXECUTION_REASONS);
  return count(execution.cancelledCount) > 0 || reason === 'CANCELLED' || reason === 'CANCELLING';
}

/** The failed task's exit code and its own words, from `Task.lastAttemptResult`. */
export interface TaskFacts {
  readonly exitCode?: number;
  readonly message?: string;
}

export function taskFacts(tasks: readonly Task[]): TaskFacts | undefined {
  // taskCount is 1, but prefer a task that says it failed should there be more.
  const failed =
    tasks.find((t) => count(t.lastAttemptResult?.exitCode) !== 0) ??
    tasks.find((t) => (t.lastAttemptResult?.status?.code ?? 0) !== 0);
  const result = failed?.lastAttemptResult;
  if (result === undefined || result === null) return undefined;
  const exitCode = count(result.exitCode);
  const message = result.status?.message ?? undefined;
  return {
    ...(exitCode === 0 ? {} : { exitCode }),
    ...(message === undefined || message === '' ? {} : { message }),
  };
}

const clip = (text: string): string =>
  text.length <= MAX_REASON ? text : `${text.slice(0, MAX_REASON - 1)}…`;

/**
 * What a Cloud Run execution says about the run, as a BackendStatus.
 *
 * - not finished (no `completionTime`, no terminal `Completed` condition):
 *   `running` once a task runs or the execution has started, else `pending`;
 * - cancelled (`cancelledCount`, or the condition's reason CANCELLED): exited
 *   with a reason and no exit code;
 * - succeeded (`Completed` is CONDITION_SUCCEEDED, or every task succeeded):
 *   exit 0. Cloud Run does not report the container's exit code on the
 *   execution; a task that succeeded exited 0;
 * - failed: the exit code from the failed task's `lastAttemptResult` when the
 *   caller read it (`task`), and a reason with Cloud Run's words.
 *
 * @example
 * executionStatus({ completionTime: { seconds: 1 }, failedCount: 1, conditions: [{ type: 'Completed', state: 'CONDITION_FAILED', message: 'Task failed' }] }, { exitCode: 2 })
 * // { state: 'exited', exitCode: 2, reason: 'the runner container exited with code 2 (Cloud Run: Task failed)' }
 */
export function executionStatus(execution: Execution, task?: TaskFacts): BackendStatus {
  if (!isFinished(execution)) {
    return count(execution.runningCount) > 0 || isSet(execution.startTime)
      ? { state: 'running' }
      : { state: 'pending' };
  }
  const completed = completedCondition(execution);
  const said = completed?.message?.trim() || task?.message?.trim() || undefined;
  if (isCancelled(execution)) {
    return {
      state: 'exited',
      reason: clip(`the Cloud Run execution was cancelled${said ? ` (${said})` : ''}`),
    };
  }
  const state = nameOf(completed?.state, CONDITION_STATES);
  const taskCount = Math.max(1, count(execution.taskCount));
  const succeeded =
    state === 'CONDITION_SUCCEEDED' ||
    (state !== 'CONDITION_FAILED' &&
      count(execution.succeededCount) >= taskCount &&
      count(execution.failedCount) === 0);
  if (succeeded) return { state: 'exited', exitCode: 0 };

  const exitCode = task?.exitCode;
  if (exitCode !== undefined) {
    const meaning = exitCodeMeaning(exitCode, SIGKILL);
    const base = `the runner container exited with code ${exitCode}${meaning === undefined ? '' : ` (${meaning})`}`;
    return {
      state: 'exited',
      exitCode,
      reason: clip(said === undefined ? base : `${base} (Cloud Run: ${said})`),
    };
  }
  return {
    state: 'exited',
    reason: clip(
      said === undefined
        ? 'the Cloud Run execution failed; Cloud Run reported no exit code'
        : `the Cloud Run execution failed: ${said}`,
    ),
  };
}
