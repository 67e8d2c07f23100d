import { describe, expect, it } from 'vitest';
import * as errors from '../../../shared/domain/errors.ts';
import { DomainError, type ErrorCode } from '../../../shared/domain/errors.ts';

/**
 * Every domain error class keeps its name, its code, its retryability and the
 * message and cause it is given, whatever base it is built on: the problem+json
 * table, the SQS partial-batch failure and the logs all read these.
 */

const MESSAGE_ONLY: readonly [string, ErrorCode, boolean][] = [
  ['NotFoundError', 'not_found', false],
  ['RunConflictError', 'run_conflict', true],
  ['InvalidTransitionError', 'invalid_transition', false],
  ['IdempotencyMismatchError', 'idempotency_mismatch', false],
  ['AssetOutsideRootError', 'asset_outside_root', false],
  ['AssetNotFoundError', 'asset_not_found', false],
  ['RunnerRefusedError', 'runner_refused', false],
  ['LauncherUnavailableError', 'launcher_unavailable', true],
  ['LaunchRejectedError', 'launch_rejected', false],
  ['UnauthorizedError', 'unauthorized', false],
  ['PayloadTooLargeError', 'payload_too_large', false],
  ['UnsupportedMediaTypeError', 'unsupported_media_type', false],
  ['NothingToRetryError', 'nothing_to_retry', false],
  ['AssetExistsError', 'asset_exists', false],
  ['NoActiveStorageError', 'no_active_storage', false],
];

type MessageOnly = new (message: string, options?: { cause?: unknown }) => DomainError;

describe('domain errors', () => {
  it.each(MESSAGE_ONLY)(
    '%s has code %s, retryable %s, and keeps message and cause',
    (name, code, retryable) => {
      const ErrorClass = (errors as unknown as Record<string, MessageOnly>)[name];
      const cause = new Error('the backend said no');

      const error = new (ErrorClass as MessageOnly)('what went wrong', { cause });

      expect(error).toBeInstanceOf(ErrorClass as MessageOnly);
      expect(error).toBeInstanceOf(DomainError);
      expect(error).toBeInstanceOf(Error);
      expect(error.name).toBe(name);
      expect(error.code).toBe(code);
      expect(error.retryable).toBe(retryable);
      expect(error.message).toBe('what went wrong');
      expect(error.cause).toBe(cause);
      expect(String(error)).toBe(`${name}: what went wrong`);
    },
  );

  it('keeps the fields, keys, problems and targets of the errors that carry more than a message', () => {
    const fields = [{ path: 'asset', message: 'Required' }];
    const validation = new errors.ValidationError('bad body', fields);
    const notConfigured = new errors.RunnerNotConfiguredError('ACI runner is not configured', [
      'azure_resource_group',
    ]);
    const settings = new errors.SettingsInvalidError([{ path: 'k8s_runner', message: 'Invalid enum value' }]);
    const selection = new errors.SelectionRefusedError(
      'mixed kinds',
      [{ targetId: 't1', reason: 'a VM' }],
      fields,
    );

    expect([validation.name, validation.code, validation.retryable, validation.fields]).toEqual([
      'ValidationError',
      'validation_failed',
      false,
      fields,
    ]);
    expect(new errors.ValidationError('no fields').fields).toEqual([]);
    expect([notConfigured.name, notConfigured.code, notConfigured.missingKeys]).toEqual([
      'RunnerNotConfiguredError',
      'runner_not_configured',
      ['azure_resource_group'],
    ]);
    expect([settings.name, settings.code, settings.message]).toEqual([
      'SettingsInvalidError',
      'settings_invalid',
      'Invalid settings: k8s_runner: Invalid enum value',
    ]);
    expect([selection.name, selection.code, selection.targets, selection.fields]).toEqual([
      'SelectionRefusedError',
      'selection_refused',
      [{ targetId: 't1', reason: 'a VM' }],
      fields,
    ]);
    for (const error of [validation, notConfigured, settings, selection])
      expect(error).toBeInstanceOf(DomainError);
  });

  it('tells the classes apart: one is never an instance of another', () => {
    const conflict = new errors.RunConflictError('lost the race');

    expect(conflict).not.toBeInstanceOf(errors.LauncherUnavailableError);
    expect(new errors.NotFoundError('no such run')).not.toBeInstanceOf(errors.AssetNotFoundError);
  });

  it('captures no stack for a lost version check, an expected outcome retried in the hot path, and only for it', () => {
    const before = Error.stackTraceLimit;
    const conflict = new errors.RunConflictError('Run r1: version 3 expected, found 4', {
      current: { id: 'r1' },
    });

    expect(conflict.stack).toBe('RunConflictError: Run r1: version 3 expected, found 4');
    expect(conflict.current).toEqual({ id: 'r1' });
    expect(Error.stackTraceLimit).toBe(before);
    expect(new errors.NotFoundError('no such run').stack?.split('\n').length).toBeGreaterThan(1);
    expect(new Error('plain').stack?.split('\n').length).toBeGreaterThan(1);
  });
});
