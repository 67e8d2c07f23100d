import { STATUS_CODES } from 'node:http';
import { ApiException } from '@kubernetes/client-node';
import { DomainError, LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import { redactAll } from '../../domain/redaction.ts';
import { parseRetryAfter } from '../retry.ts';

/**
 * Kubernetes API failures as domain errors. `@kubernetes/client-node` 1.x
 * throws `ApiException` with `code` (the HTTP status) and `body` (the raw
 * JSON text of a `Status` object), and node-fetch's `FetchError` when nothing
 * answered; it retries nothing itself.
 *
 * @example
 * try { await core.readNamespacedPod({ name, namespace }) } catch (e) { throw kubeError(e, 'read pod') }
 */

/** HTTP status of an API answer; undefined when nothing answered. */
export function statusOf(error: unknown): number | undefined {
  return error instanceof ApiException && typeof error.code === 'number' ? error.code : undefined;
}

/** Errors of a request that got no answer: node-fetch's, an abort (our timeout), Node's socket errors. */
const NO_ANSWER_NAMES = new Set(['FetchError', 'AbortError', 'TimeoutError']);

/**
 * Worth another try: throttling (429), a server-side failure (5xx) or no
 * answer at all (connection refused or reset, DNS, TLS, timeout). Anything
 * else — a 4xx, or a bug such as a TypeError — is not.
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof DomainError) return error.retryable;
  const status = statusOf(error);
  if (status !== undefined) return status === 429 || status >= 500;
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return NO_ANSWER_NAMES.has(error.name) || (typeof code === 'string' && /^E[A-Z_]+$/.test(code));
}

/**
 * A 403 whose Status says `exceeded quota`: the API server's answer when a
 * ResourceQuota (e.g. `pods: 100`) has no room for the object ("pods \"rw-1\"
 * is forbidden: exceeded quota: pods, requested: pods=1, used: pods=100,
 * limited: pods=100"). Not worth retrying at once, but not a rejection either.
 */
export function isQuotaExceeded(error: unknown): boolean {
  if (statusOf(error) !== 403) return false;
  return /exceeded quota/i.test(rawSaid(error));
}

/** `Retry-After` of a 429 or 503, in milliseconds. */
export function retryAfterMs(error: unknown): number | undefined {
  if (!(error instanceof ApiException)) return undefined;
  const headers = (error.headers ?? {}) as Record<string, string | undefined>;
  return parseRetryAfter(headers['retry-after'] ?? headers['Retry-After']);
}

interface StatusBody {
  readonly reason?: unknown;
  readonly message?: unknown;
}

const MAX_SAID = 300;

/**
 * What the API server said, from its `Status` body: `<code> <reason>: <message>`.
 * Never the ApiException's own message, which quotes the whole body and headers.
 */
export function apiSaid(error: unknown, secrets: readonly string[] = []): string {
  // Redact before cutting: a cut through a value would leave its first half unmatched.
  return clip(secrets.length === 0 ? rawSaid(error) : redactAll(rawSaid(error), secrets));
}

function rawSaid(error: unknown): string {
  if (error instanceof ApiException) {
    let reason: string | undefined;
    let message: string | undefined;
    try {
      const body = (typeof error.body === 'string' ? JSON.parse(error.body) : error.body) as StatusBody;
      reason = typeof body?.reason === 'string' ? body.reason : undefined;
      message = typeof body?.message === 'string' ? body.message : undefined;
    } catch {
      // Not a Status object (a proxy's HTML page): the code alone says enough.
    }
    const said = [reason, message].filter((s) => s !== undefined && s !== '').join(': ');
    // No Status body (the client drops it for 401): the status line's own words.
    return said === ''
      ? `${error.code} ${STATUS_CODES[error.code] ?? 'HTTP error'}`
      : `${error.code} ${said}`;
  }
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

const clip = (text: string): string => (text.length <= MAX_SAID ? text : `${text.slice(0, MAX_SAID - 1)}…`);

/**
 * Translate a failure of `action` (e.g. `create pod rw-…`): transient ones
 * (see isTransient) become LauncherUnavailableError, anything else the API
 * refused for good (400, 401, 403, 404 of the namespace, 422) becomes
 * LaunchRejectedError. `secrets` are values that must not appear in the
 * message; when given, the cause is dropped too, since the ApiException
 * quotes the server's answer, which may echo the request. The redaction is
 * the shim's (shared/domain/redaction.ts): raw, escaped and base64 forms,
 * since a Secret's `data` carries its values as base64.
 */
export function kubeError(error: unknown, action: string, secrets: readonly string[] = []): DomainError {
  if (error instanceof DomainError) return error;
  const said = apiSaid(error, secrets);
  if (isQuotaExceeded(error)) {
    // A ResourceQuota is full: capacity frees up as pods end, so the run waits (shared/app/launch-budget.ts).
    return new LauncherUnavailableError(`Kubernetes ${action} waits for quota (${said})`, {
      cause: Object.assign(new Error('exceeded quota'), { name: 'ExceededQuota', code: 403 }),
    });
  }
  const options = secrets.length === 0 ? { cause: error } : {};
  if (isTransient(error)) {
    return new LauncherUnavailableError(`Kubernetes ${action} failed, will retry (${said})`, options);
  }
  return new LaunchRejectedError(`Kubernetes ${action} was refused (${said})`, options);
}
