import { type DomainError, LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';

/** Error names AWS uses for "slow down"; all are worth a retry. */
const THROTTLING = new Set([
  'ThrottlingException',
  'Throttling',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'ProvisionedThroughputExceededException',
  // ECS: an account or cluster quota on running tasks; capacity frees up as tasks end.
  'LimitExceededException',
]);

interface SdkErrorShape {
  readonly name?: string;
  readonly message?: string;
  readonly $fault?: 'client' | 'server';
  readonly $metadata?: { readonly httpStatusCode?: number };
  /** Set by the SDK when the answer could not be parsed (an HTML 500 from a proxy or emulator). */
  readonly $response?: { readonly statusCode?: number };
}

/**
 * Translate an ECS SDK failure into a domain error: throttling, 5xx and
 * anything that never got an answer (network, timeout) are retryable
 * (LauncherUnavailableError); the service refusing the request
 * (`ClientException`, `InvalidParameterException`, missing cluster, access
 * denied …) is permanent (LaunchRejectedError). Messages name the action and
 * the service's own words, never the request (which may quote the task spec).
 *
 * @example
 * try { await ecs.send(cmd) } catch (e) { throw ecsError(e, 'RunTask') }
 */
export function ecsError(error: unknown, action: string): DomainError {
  if (error instanceof LaunchRejectedError || error instanceof LauncherUnavailableError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkErrorShape;
  const name = e.name ?? 'Error';
  const status = e.$metadata?.httpStatusCode ?? e.$response?.statusCode;
  const said = `${name}: ${e.message ?? String(error)}`.slice(0, 500);
  // A network failure carries `$metadata` too, but no status: nothing answered.
  if (
    status === undefined ||
    THROTTLING.has(name) ||
    e.$fault === 'server' ||
    status >= 500 ||
    status === 429
  ) {
    return new LauncherUnavailableError(`ECS ${action} failed, will retry (${said})`, { cause: error });
  }
  return new LaunchRejectedError(`ECS ${action} was refused (${said})`, { cause: error });
}
