import type { TaskStopCode } from '@aws-sdk/client-ecs';
import { exitCodeMeaning } from '../../domain/exit-codes.ts';
import type { BackendStatus } from '../../ports/launcher.ts';

/** The likely cause of a SIGKILL on this backend. */
const SIGKILL = 'killed by SIGKILL, often out of memory';

/**
 * Turns what ECS says about a stopped task into an exit code and one human
 * reason. Pure: the launcher (DescribeTasks) and the status sync (EventBridge
 * "ECS Task State Change") both feed it the same four facts.
 *
 * @example
 * describeStoppedTask({ stopCode: 'TaskFailedToStart', stoppedReason: 'CannotPullContainerError: pull access denied' })
 * // { succeeded: false, reason: 'image pull failed: pull access denied' }
 */
export interface StoppedTaskFacts {
  readonly stopCode?: string | undefined;
  readonly stoppedReason?: string | undefined;
  /** `reason` of the runner container. */
  readonly containerReason?: string | undefined;
  /** `exitCode` of the runner container. */
  readonly exitCode?: number | undefined;
}

export interface TaskOutcome {
  /** Exit 0 with nothing wrong: the run succeeded. */
  readonly succeeded: boolean;
  readonly exitCode?: number;
  /** Absent for a clean exit 0. */
  readonly reason?: string;
}

/** Longest reason we keep: ECS reasons can quote whole registry answers. */
const MAX_REASON = 500;

/**
 * ECS error classes that open a container `reason` or a task `stoppedReason`
 * ("CannotPullContainerError: …"). Order matters: the more specific first.
 */
const ERROR_CLASSES: readonly (readonly [prefix: string, meaning: string])[] = [
  ['CannotPullContainerError', 'image pull failed'],
  ['CannotCreateContainerError', 'the container could not be created'],
  ['CannotStartContainerError', 'the container could not start'],
  ['CannotInspectContainerError', 'the container runtime could not inspect the container'],
  ['ContainerRuntimeTimeoutError', 'the container runtime timed out'],
  ['ContainerRuntimeError', 'the container runtime failed'],
  [
    'ResourceInitializationError',
    'the task could not be initialised (secrets, registry credentials, log driver or network)',
  ],
  ['OutOfMemoryError', 'out of memory'],
  ['InternalError', 'ECS reported an internal error'],
];

const STOP_CODES = {
  TaskFailedToStart: 'the task failed to start',
  EssentialContainerExited: 'the runner container exited',
  UserInitiated: 'the task was stopped on request',
  ServiceSchedulerInitiated: 'the ECS scheduler stopped the task',
  SpotInterruption: 'Fargate Spot reclaimed the capacity (spot interruption)',
  TerminationNotice: "the task's host was retired (termination notice)",
  InfrastructureHealth: 'ECS stopped the task because its infrastructure was unhealthy',
} as const satisfies Record<TaskStopCode, string>;

function classify(text: string | undefined): string | undefined {
  const trimmed = text?.trim();
  if (trimmed === undefined || trimmed === '') return undefined;
  for (const [prefix, meaning] of ERROR_CLASSES) {
    if (trimmed.startsWith(prefix)) {
      const detail = trimmed
        .slice(prefix.length)
        .replace(/^[:\s]+/, '')
        .trim();
      return detail === '' ? meaning : `${meaning}: ${detail}`;
    }
  }
  return undefined;
}

const clip = (text: string): string =>
  text.length <= MAX_REASON ? text : `${text.slice(0, MAX_REASON - 1)}…`;

/** ECS's own words that add nothing to the stop code's meaning. */
const GENERIC_REASONS = new Set(['', 'Essential container in task exited', 'Task stopped by user']);

export function describeStoppedTask(facts: StoppedTaskFacts): TaskOutcome {
  const { exitCode } = facts;
  const withCode = (reason: string | undefined): TaskOutcome => {
    const out: { succeeded: boolean; exitCode?: number; reason?: string } = {
      succeeded: exitCode === 0 && reason === undefined,
    };
    if (exitCode !== undefined) out.exitCode = exitCode;
    if (reason !== undefined) out.reason = clip(reason);
    return out;
  };

  // A named ECS error is the most specific thing anyone can be told.
  const classified = classify(facts.containerReason) ?? classify(facts.stoppedReason);
  if (classified !== undefined) return withCode(classified);

  const stopCode = facts.stopCode;
  const stoppedReason = facts.stoppedReason?.trim() ?? '';
  const meaning = stopCode === undefined ? undefined : (STOP_CODES as Record<string, string>)[stopCode];

  if (exitCode !== undefined) {
    if (exitCode === 0 && stopCode !== 'SpotInterruption' && stopCode !== 'TaskFailedToStart') {
      return withCode(undefined);
    }
    const extra = exitCodeMeaning(exitCode, SIGKILL);
    const base = `the runner container exited with code ${exitCode}${extra === undefined ? '' : ` (${extra})`}`;
    if (stopCode === undefined || stopCode === 'EssentialContainerExited') return withCode(base);
    return withCode(`${meaning ?? `stopped (${stopCode})`}${detailOf(stoppedReason)}; ${base}`);
  }

  if (meaning !== undefined) return withCode(`${meaning}${detailOf(stoppedReason)}`);
  if (stopCode !== undefined) return withCode(`the task stopped (${stopCode})${detailOf(stoppedReason)}`);
  if (stoppedReason !== '') return withCode(`the task stopped: ${stoppedReason}`);
  return withCode('the task stopped without an exit code or a reason');
}

const detailOf = (stoppedReason: string): string =>
  GENERIC_REASONS.has(stoppedReason) ? '' : `: ${stoppedReason}`;

/** What both DescribeTasks and a task state change event say about a task. */
export interface TaskFacts {
  readonly lastStatus?: string | undefined;
  readonly stopCode?: string | undefined;
  readonly stoppedReason?: string | undefined;
  readonly containers?:
    | readonly {
        readonly name?: string | undefined;
        readonly exitCode?: number | undefined;
        readonly reason?: string | undefined;
      }[]
    | undefined;
}

/**
 * ECS `lastStatus` → what the run may become: the one mapping of the
 * launcher's `status` (DescribeTasks) and the status sync (EventBridge).
 * `windingDown` (DEACTIVATING, STOPPING, DEPROVISIONING): the task is past
 * PENDING but its exit code is final only at STOPPED; a task that never ran
 * passes through these too, so an event for one says nothing new, while a
 * poll reports it running. Undefined for a status ECS does not document.
 * Pure.
 *
 * @example
 * ecsTaskStatus({ lastStatus: 'STOPPED', containers: [{ name: 'runner', exitCode: 0 }] }, 'runner')
 * // { status: { state: 'exited', exitCode: 0 }, windingDown: false }
 */
export function ecsTaskStatus(
  task: TaskFacts,
  containerName: string,
): { readonly status: BackendStatus; readonly windingDown: boolean } | undefined {
  switch (task.lastStatus) {
    case 'PROVISIONING':
    case 'PENDING':
    case 'ACTIVATING':
      return { status: { state: 'pending' }, windingDown: false };
    case 'RUNNING':
      return { status: { state: 'running' }, windingDown: false };
    case 'DEACTIVATING':
    case 'STOPPING':
    case 'DEPROVISIONING':
      return { status: { state: 'running' }, windingDown: true };
    case 'STOPPED': {
      const container = task.containers?.find((c) => c.name === containerName);
      const outcome = describeStoppedTask({
        stopCode: task.stopCode,
        stoppedReason: task.stoppedReason,
        containerReason: container?.reason,
        exitCode: container?.exitCode,
      });
      const status: BackendStatus = {
        state: 'exited',
        ...(outcome.exitCode === undefined ? {} : { exitCode: outcome.exitCode }),
        ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
      };
      return { status, windingDown: false };
    }
    default:
      return undefined;
  }
}
