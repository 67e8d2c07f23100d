import type { Failure, TaskOverride } from '@aws-sdk/client-ecs';
import { LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';

/** "A total of 8192 characters are allowed for overrides", JSON punctuation included (RunTask API reference). */
export const ECS_OVERRIDES_MAX_CHARS = 8192;

/**
 * Size of the overrides as ECS counts them: the JSON text of the structure.
 * Counted in UTF-8 bytes, which equals the character count for ASCII and is
 * never less than it, so a spec we accept is never refused by ECS.
 */
export function overridesSize(overrides: TaskOverride): number {
  return Buffer.byteLength(JSON.stringify(overrides), 'utf8');
}

/** RunTask answered without a task: capacity problems pass, anything else is the request's fault. */
export function runTaskFailure(failures: readonly Failure[] | undefined): Error {
  const text = (failures ?? [])
    .map((f) => [f.reason, f.detail].filter((s) => s !== undefined && s !== '').join(': '))
    .join('; ');
  if (text === '') return new LauncherUnavailableError('ECS RunTask returned neither a task nor a failure');
  if (/capacity|RESOURCE:|AGENT|throttl|try again/i.test(text)) {
    return new LauncherUnavailableError(`ECS RunTask could not place the task, will retry (${text})`);
  }
  return new LaunchRejectedError(`ECS RunTask refused the task (${text})`);
}

/** StopTask's answer for a task ECS no longer knows. */
export function isTaskNotFound(error: unknown): boolean {
  const e = error as { name?: string; message?: string } | undefined;
  return e?.name === 'InvalidParameterException' && /task was not found|not found/i.test(e.message ?? '');
}
