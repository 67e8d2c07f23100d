import type { EventBridgeEvent } from 'aws-lambda';
import { isTerminal, type Run } from '../../domain/run.ts';
import * as z from '../../lib/zod.ts';
import type { BackendStatus } from '../../ports/launcher.ts';
import {
  type EcsHandle,
  parseEcsHandle,
  parseGroup,
  parseStartedBy,
  type RunAttempt,
  sameTask,
} from './handle.ts';
import { ecsTaskStatus } from './task-outcome.ts';

/** The fields of an "ECS Task State Change" detail we read; ECS sends many more. */
const text = () => z.string().check(z.minLength(1));
const DetailSchema = z.looseObject({
  taskArn: text(),
  clusterArn: text(),
  lastStatus: text(),
  /** Increases with every change of the task; events may arrive in any order and more than once. */
  version: z.optional(z.int().check(z.minimum(0))),
  startedBy: z.optional(z.string()),
  group: z.optional(z.string()),
  stopCode: z.optional(z.string()),
  stoppedReason: z.optional(z.string()),
  containers: z.optional(
    z.array(
      z.looseObject({
        name: z.string(),
        exitCode: z.optional(z.int()),
        reason: z.optional(z.string()),
      }),
    ),
  ),
});
/** EventBridge's detail-type for ECS task state changes. */
export const ECS_TASK_STATE_CHANGE = 'ECS Task State Change';

/** The event as EventBridge delivers it; `detail` is parsed by parseTaskEvent. */
export type EcsTaskStateChangeEvent = EventBridgeEvent<typeof ECS_TASK_STATE_CHANGE, unknown>;

export type TaskEventDetail = z.infer<typeof DetailSchema>;

/** What the status sync did with one event; returned for tests and logged. */
export type EcsEventOutcome =
  | 'applied'
  | 'recorded'
  | 'malformed'
  | 'not_ours'
  | 'unknown_run'
  | 'other_attempt'
  | 'other_task'
  | 'stale'
  | 'terminal';

/**
 * An EventBridge "ECS Task State Change" detail as the status sync reads it:
 * checked, with the run it belongs to and what it says about that run. Pure.
 *
 * @example
 * const parsed = parseTaskEvent(event.detail);
 * if (parsed.ok && parsed.owner !== undefined) decideTaskEvent(run, parsed.owner, parsed.detail); // 'applied'
 */
export function parseTaskEvent(
  detail: unknown,
):
  | { readonly ok: true; readonly detail: TaskEventDetail; readonly owner: RunAttempt | undefined }
  | { readonly ok: false; readonly issues: readonly z.core.$ZodIssue[] } {
  const parsed = DetailSchema.safeParse(detail);
  if (!parsed.success) return { ok: false, issues: parsed.error.issues };
  // The group always says; startedBy when it was not hashed.
  const owner = parseGroup(parsed.data.group) ?? parseStartedBy(parsed.data.startedBy);
  return { ok: true, detail: parsed.data, owner };
}

/** The run status an event reports; undefined when it says nothing new (see ecsTaskStatus). */
export function taskEventStatus(detail: TaskEventDetail, containerName: string): BackendStatus | undefined {
  const mapped = ecsTaskStatus(detail, containerName);
  return mapped === undefined || mapped.windingDown ? undefined : mapped.status;
}

/** The handle an event's task would be recorded under, with the event's version. */
export function taskEventHandle(detail: TaskEventDetail): EcsHandle {
  const cluster = detail.clusterArn;
  const version = detail.version;
  return version === undefined
    ? { cluster, taskArn: detail.taskArn }
    : { cluster, taskArn: detail.taskArn, version };
}

/** The run's recorded task is the event's. */
export const isRecordedTask = (run: Run, detail: TaskEventDetail): boolean => {
  const h = parseEcsHandle(run.launch?.handle);
  return h !== undefined && sameTask(h.taskArn, detail.taskArn);
};

/**
 * Whether an event may change the run: it must be on the same attempt and
 * (once recorded) the same task, and newer than the highest version applied.
 * Only a run still being dispatched may adopt a task it never recorded.
 */
export function decideTaskEvent(run: Run, owner: RunAttempt, detail: TaskEventDetail): EcsEventOutcome {
  if (isTerminal(run.state)) return 'terminal';
  if (run.launch?.backend !== 'ecs') return 'not_ours';
  if (run.attempt !== owner.attempt) return 'other_attempt';
  const recorded = parseEcsHandle(run.launch.handle);
  if (recorded === undefined) {
    return run.state === 'dispatching' ? 'applied' : 'other_task';
  }
  if (!sameTask(recorded.taskArn, detail.taskArn)) return 'other_task';
  if (detail.version !== undefined && recorded.version !== undefined && detail.version <= recorded.version) {
    return 'stale';
  }
  return 'applied';
}
