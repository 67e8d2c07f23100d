import { describe, expect, it } from 'vitest';
import {
  ECS_OVERRIDES_MAX_CHARS,
  isTaskNotFound,
  overridesSize,
  runTaskFailure,
} from '../../../../shared/adapters/ecs/run-task.ts';
import { LauncherUnavailableError, LaunchRejectedError } from '../../../../shared/domain/errors.ts';

describe('overridesSize', () => {
  it('counts the JSON text in UTF-8 bytes, never less than the characters ECS counts', () => {
    const ascii = { containerOverrides: [{ name: 'runner', environment: [{ name: 'A', value: 'x' }] }] };
    const accented = { containerOverrides: [{ name: 'runner', environment: [{ name: 'A', value: 'é' }] }] };

    expect(overridesSize(ascii)).toBe(JSON.stringify(ascii).length);
    expect(overridesSize(accented)).toBe(JSON.stringify(accented).length + 1);
    expect(ECS_OVERRIDES_MAX_CHARS).toBe(8192);
  });
});

describe('runTaskFailure', () => {
  it('lets capacity problems pass and refuses the rest for good', () => {
    const capacity = runTaskFailure([
      { reason: 'Capacity is unavailable at this time', detail: 'try again' },
    ]);
    const refused = runTaskFailure([{ arn: 'arn:x', reason: 'MISSING', detail: 'subnet-1 does not exist' }]);
    const empty = runTaskFailure([]);

    expect(capacity).toBeInstanceOf(LauncherUnavailableError);
    expect(capacity.message).toBe(
      'ECS RunTask could not place the task, will retry (Capacity is unavailable at this time: try again)',
    );
    expect(refused).toBeInstanceOf(LaunchRejectedError);
    expect(refused.message).toBe('ECS RunTask refused the task (MISSING: subnet-1 does not exist)');
    expect(empty).toBeInstanceOf(LauncherUnavailableError);
  });
});

describe('isTaskNotFound', () => {
  it('recognises StopTask’s answer for a task ECS no longer knows, and nothing else', () => {
    expect(
      isTaskNotFound({ name: 'InvalidParameterException', message: 'The referenced task was not found.' }),
    ).toBe(true);
    expect(isTaskNotFound({ name: 'InvalidParameterException', message: 'bad cluster' })).toBe(false);
    expect(isTaskNotFound({ name: 'ServerException', message: 'not found' })).toBe(false);
    expect(isTaskNotFound(undefined)).toBe(false);
  });
});
