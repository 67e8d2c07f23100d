/**
 * Domain errors. Each carries a stable `code`; the HTTP layer maps codes to
 * status and title in one table (shared/http/problem.ts). Nothing here knows HTTP.
 */
export type ErrorCode =
  | 'validation_failed'
  | 'not_found'
  | 'run_conflict'
  | 'invalid_transition'
  | 'idempotency_mismatch'
  | 'asset_outside_root'
  | 'asset_not_found'
  | 'runner_not_configured'
  | 'runner_refused'
  | 'launcher_unavailable'
  | 'launch_rejected'
  | 'unauthorized'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'settings_invalid'
  | 'selection_refused'
  | 'nothing_to_retry'
  | 'asset_exists'
  | 'no_active_storage';

export interface FieldError {
  readonly path: string;
  readonly message: string;
}

export abstract class DomainError extends Error {
  abstract readonly code: ErrorCode;
  /** Retryable errors are redelivered (SQS partial batch failure); permanent ones settle the run. */
  readonly retryable: boolean = false;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The base of one domain error class: its stable `code` and whether it is
 * retryable. Each error stays a named class (its `name`, `instanceof`, and a
 * constructor of its own where it carries more than a message).
 *
 * @example
 * export class NotFoundError extends domainError('not_found') {}
 * export class RunConflictError extends domainError('run_conflict', { retryable: true }) {}
 */
function domainError<const C extends ErrorCode>(code: C, options: { retryable?: boolean } = {}) {
  const retryable = options.retryable ?? false;
  abstract class CodedError extends DomainError {
    readonly code: C = code;
    override readonly retryable: boolean = retryable;
  }
  return CodedError;
}

export class ValidationError extends domainError('validation_failed') {
  constructor(
    message: string,
    readonly fields: readonly FieldError[] = [],
  ) {
    super(message);
  }
}

export class NotFoundError extends domainError('not_found') {}

/**
 * A conditional write lost: someone else changed the record first. `current`
 * is the run as the store found it when the write failed, where its answer
 * held it (a DynamoDB condition failure returns the item): a caller retrying
 * from it needs no read. Not enumerable, so a logged error does not carry
 * the record. Typed `unknown` because run.ts imports this module: the run
 * stores put a Run there, and mutateRun (shared/app/run-updates.ts) reads it
 * as one.
 */
export class RunConflictError extends domainError('run_conflict', { retryable: true }) {
  declare readonly current?: unknown;

  constructor(message: string, options: { cause?: unknown; current?: unknown } = {}) {
    // An expected outcome that mutateRun retries (local mode's dispatcher loses one to the relay's claim on
    // nearly every run): no stack trace, which V8 would capture at every construction, tens of µs deep in an
    // async chain. The message names the run and the versions, which is all a conflict that outlives
    // mutateRun's retries is then reported with.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message, options.cause === undefined ? {} : { cause: options.cause });
    } finally {
      Error.stackTraceLimit = limit;
    }
    if (options.current !== undefined) {
      Object.defineProperty(this, 'current', { value: options.current, enumerable: false });
    }
  }
}

export class InvalidTransitionError extends domainError('invalid_transition') {}

export class IdempotencyMismatchError extends domainError('idempotency_mismatch') {}

export class AssetOutsideRootError extends domainError('asset_outside_root') {}

export class AssetNotFoundError extends domainError('asset_not_found') {}

export class RunnerRefusedError extends domainError('runner_refused') {}

/**
 * A backend whose required settings are missing, with the seeds' message
 * ("Ansible ACI runner is not configured: set azure_resource_group"): what
 * runner resolution refuses with at submit, and what an adapter throws when
 * it is built from such settings.
 *
 * @example
 * throw new RunnerNotConfiguredError('Ansible ACI runner is not configured: set azure_resource_group', ['azure_resource_group']);
 */
export class RunnerNotConfiguredError extends domainError('runner_not_configured') {
  constructor(
    message: string,
    readonly missingKeys: readonly string[] = [],
  ) {
    super(message);
  }
}

/** The backend could not be reached or throttled us: try again later. */
export class LauncherUnavailableError extends domainError('launcher_unavailable', { retryable: true }) {}

/** The backend refused the launch for good (bad image, bad parameters). */
export class LaunchRejectedError extends domainError('launch_rejected') {}

export class UnauthorizedError extends domainError('unauthorized') {}

export class PayloadTooLargeError extends domainError('payload_too_large') {}

export class UnsupportedMediaTypeError extends domainError('unsupported_media_type') {}

export class SettingsInvalidError extends domainError('settings_invalid') {
  constructor(readonly problems: readonly FieldError[]) {
    super(`Invalid settings: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
  }
}

/** One entry of a target selection that cannot be used, with why. */
export interface TargetRefusal {
  readonly targetId: string;
  readonly reason: string;
}

/**
 * A batch selection refused as a whole (unknown ids, mixed kinds, untargetable
 * rows): nothing was created. Names every offending target at once.
 */
export class SelectionRefusedError extends domainError('selection_refused') {
  constructor(
    message: string,
    readonly targets: readonly TargetRefusal[],
    readonly fields: readonly FieldError[] = [],
  ) {
    super(message);
  }
}

/** A batch retry found no run that ended failed, refused, timed_out or cancelled. */
export class NothingToRetryError extends domainError('nothing_to_retry') {}

/** An upload would replace an existing asset and the caller did not ask to overwrite. */
export class AssetExistsError extends domainError('asset_exists') {}

/** No storage backend is usable here (the seeds' "No active storage backend"): assets can be neither stored nor read. */
export class NoActiveStorageError extends domainError('no_active_storage') {}
