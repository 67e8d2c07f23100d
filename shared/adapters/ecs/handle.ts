import { createHash } from 'node:crypto';
import type { RunAttempt } from '../../ports/launcher.ts';

/**
 * How an ECS task is tied to its run, in both directions. Pure; shared by the
 * launcher and the status sync.
 *
 * - handle `ecs:<cluster>/<taskArn>#v<version>`: stored on the run. The
 *   `#v<n>` suffix is the highest EventBridge `detail.version` applied to the
 *   run, so a late event is recognised (the domain has no field for it).
 * - `startedBy` `rw/<runId>/<attempt>` (≤ 36 chars; ECS allows letters, digits,
 *   `-`, `_`, `/`), or `rwh/<hash of runId>/<attempt>` when that does not fit:
 *   what `ListTasks` filters on to adopt a task on redelivery.
 * - `group` `rw:<runId>:<attempt>` (≤ 255 chars): carried by every "ECS Task
 *   State Change" event, which has no tags, so the status sync finds the run
 *   even when `startedBy` had to be hashed.
 * - `clientToken` `<runId>#<attempt>` (≤ 64 chars): ECS's own idempotency key.
 *
 * @example
 * formatEcsHandle({ cluster: 'runs', taskArn: 'arn:aws:ecs:eu-west-1:1:task/runs/abc', version: 3 })
 * // 'ecs:runs/arn:aws:ecs:eu-west-1:1:task/runs/abc#v3'
 */
export interface EcsHandle {
  /** Short cluster name (never an ARN, so the first `/` ends it). */
  readonly cluster: string;
  readonly taskArn: string;
  /** Highest task-state-change `detail.version` applied to the run. */
  readonly version?: number;
}

export type { RunAttempt };

const PREFIX = 'ecs:';
const STARTED_BY_MAX = 36;
const CLIENT_TOKEN_MAX = 64;
const GROUP_MAX = 255;
const SAFE_STARTED_BY = /^[A-Za-z0-9_-]+$/;

/** `arn:aws:ecs:…:cluster/name` or `name` → `name`. */
export const clusterName = (cluster: string): string => cluster.slice(cluster.lastIndexOf('/') + 1);

export function formatEcsHandle(handle: EcsHandle): string {
  const base = `${PREFIX}${clusterName(handle.cluster)}/${handle.taskArn}`;
  return handle.version === undefined ? base : `${base}#v${handle.version}`;
}

export function parseEcsHandle(handle: string | undefined): EcsHandle | undefined {
  if (handle === undefined || !handle.startsWith(PREFIX)) return undefined;
  let rest = handle.slice(PREFIX.length);
  let version: number | undefined;
  const suffix = /#v(\d{1,15})$/.exec(rest);
  if (suffix !== null) {
    version = Number(suffix[1]);
    rest = rest.slice(0, suffix.index);
  }
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return undefined;
  const cluster = rest.slice(0, slash);
  const taskArn = rest.slice(slash + 1);
  return version === undefined ? { cluster, taskArn } : { cluster, taskArn, version };
}

/** Same task, whichever form of its id each side holds (full ARN or the id after the last `/`). */
export const sameTask = (a: string, b: string): boolean =>
  a === b || a.slice(a.lastIndexOf('/') + 1) === b.slice(b.lastIndexOf('/') + 1);

export function clientTokenFor({ runId, attempt }: RunAttempt): string {
  const token = `${runId}#${attempt}`;
  if (token.length > CLIENT_TOKEN_MAX) {
    throw new RangeError(`ECS clientToken ${token} is longer than ${CLIENT_TOKEN_MAX} characters`);
  }
  return token;
}

/**
 * `rw/<runId>/<attempt>` when that fits; otherwise the run id is replaced by a
 * hash of it (still deterministic, so ListTasks finds the task again).
 */
export function startedByFor({ runId, attempt }: RunAttempt): string {
  const tail = `/${attempt}`;
  const plain = `rw/${runId}${tail}`;
  if (plain.length <= STARTED_BY_MAX && SAFE_STARTED_BY.test(runId)) return plain;
  const room = STARTED_BY_MAX - 'rwh/'.length - tail.length;
  const digest = createHash('sha256').update(runId).digest('base64url').slice(0, room);
  return `rwh/${digest}${tail}`;
}

export function groupFor({ runId, attempt }: RunAttempt): string {
  const group = `rw:${runId}:${attempt}`;
  if (group.length > GROUP_MAX) throw new RangeError(`ECS task group for run ${runId} is too long`);
  return group;
}

const ATTEMPT = /^(0|[1-9]\d{0,8})$/;

export function parseGroup(group: string | undefined): RunAttempt | undefined {
  if (group === undefined || !group.startsWith('rw:')) return undefined;
  const colon = group.lastIndexOf(':');
  const runId = group.slice(3, colon);
  const attempt = group.slice(colon + 1);
  return runId === '' || !ATTEMPT.test(attempt) ? undefined : { runId, attempt: Number(attempt) };
}

/** Undefined for a hashed `startedBy` (`rwh/…`): the run id is not in it, the group has it. */
export function parseStartedBy(startedBy: string | undefined): RunAttempt | undefined {
  const match = /^rw\/([A-Za-z0-9_-]+)\/(0|[1-9]\d{0,8})$/.exec(startedBy ?? '');
  return match?.[1] === undefined ? undefined : { runId: match[1], attempt: Number(match[2]) };
}

/** Tags on every task the ECS launcher starts. */
export const RUN_ID_TAG = 'remote-worker:run-id';
export const ATTEMPT_TAG = 'remote-worker:attempt';
