import { type DomainError, LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import { parseRetryAfter } from '../retry.ts';

/**
 * What a Google API answered, whichever client carried the call: the Cloud
 * Run SDK over REST (a GaxiosError whose `status` is the HTTP status and
 * whose message is the raw JSON error body), `authClient.request` (a
 * GaxiosError with the parsed body in `response.data`), or a long-running
 * operation that finished with an error (a GoogleError whose `code` is the
 * gRPC code).
 */
export interface GoogleFailure {
  /** HTTP status; undefined when nothing answered (connection refused, reset, timeout). */
  readonly httpStatus?: number;
  /** Google's canonical status name (`ALREADY_EXISTS`, `RESOURCE_EXHAUSTED` …) when it said one. */
  readonly status?: string;
  /** Google's own words, when it said any. */
  readonly message?: string;
  /** What `Retry-After` asked for, in milliseconds. */
  readonly retryAfterMs?: number;
}

/** gRPC code → the HTTP status Google maps it to (google.rpc.Code). */
const GRPC_TO_HTTP: Readonly<Record<number, readonly [number, string]>> = {
  1: [499, 'CANCELLED'],
  2: [500, 'UNKNOWN'],
  3: [400, 'INVALID_ARGUMENT'],
  4: [504, 'DEADLINE_EXCEEDED'],
  5: [404, 'NOT_FOUND'],
  6: [409, 'ALREADY_EXISTS'],
  7: [403, 'PERMISSION_DENIED'],
  8: [429, 'RESOURCE_EXHAUSTED'],
  9: [400, 'FAILED_PRECONDITION'],
  10: [409, 'ABORTED'],
  11: [400, 'OUT_OF_RANGE'],
  12: [501, 'UNIMPLEMENTED'],
  13: [500, 'INTERNAL'],
  14: [503, 'UNAVAILABLE'],
  15: [500, 'DATA_LOSS'],
  16: [401, 'UNAUTHENTICATED'],
};

/** Statuses worth another try: throttling, server trouble, a conflict with a concurrent change. */
const TRANSIENT_STATUS = new Set([
  'RESOURCE_EXHAUSTED',
  'UNAVAILABLE',
  'DEADLINE_EXCEEDED',
  'INTERNAL',
  'ABORTED',
]);

interface ErrorShape {
  readonly name?: unknown;
  readonly message?: unknown;
  readonly code?: unknown;
  readonly status?: unknown;
  readonly response?: { readonly status?: unknown; readonly data?: unknown; readonly headers?: unknown };
}

interface GoogleErrorBody {
  readonly error?: { readonly code?: unknown; readonly status?: unknown; readonly message?: unknown };
}

function bodyOf(e: ErrorShape): GoogleErrorBody | undefined {
  const data = e.response?.data;
  if (typeof data === 'object' && data !== null) return data as GoogleErrorBody;
  const text = typeof data === 'string' ? data : typeof e.message === 'string' ? e.message : undefined;
  if (text === undefined || !text.trimStart().startsWith('{')) return undefined;
  try {
    return JSON.parse(text) as GoogleErrorBody;
  } catch {
    return undefined;
  }
}

function headerOf(headers: unknown, name: string): string | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined;
  const h = headers as { get?: (n: string) => string | null } & Record<string, unknown>;
  if (typeof h.get === 'function') return h.get(name) ?? undefined;
  const value = h[name];
  return typeof value === 'string' ? value : undefined;
}

export function googleFailure(error: unknown): GoogleFailure {
  const e = (typeof error === 'object' && error !== null ? error : {}) as ErrorShape;
  const body = bodyOf(e)?.error;
  let httpStatus =
    typeof e.response?.status === 'number'
      ? e.response.status
      : typeof e.status === 'number'
        ? e.status
        : undefined;
  let status = typeof body?.status === 'string' ? body.status : undefined;
  // A GoogleError (an operation that failed, a gRPC-shaped error): `code` is the gRPC code.
  if (httpStatus === undefined && typeof e.code === 'number') {
    const mapped = GRPC_TO_HTTP[e.code];
    if (mapped !== undefined) {
      httpStatus = mapped[0];
      status ??= mapped[1];
    }
  }
  if (httpStatus === undefined && typeof body?.code === 'number') httpStatus = body.code;
  const message =
    typeof body?.message === 'string'
      ? body.message
      : typeof e.message === 'string' && body === undefined
        ? e.message
        : undefined;
  const retryAfterMs = parseRetryAfter(headerOf(e.response?.headers, 'retry-after'));
  return {
    ...(httpStatus === undefined ? {} : { httpStatus }),
    ...(status === undefined ? {} : { status }),
    ...(message === undefined ? {} : { message }),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  };
}

export const isNotFound = (error: unknown): boolean => {
  const f = googleFailure(error);
  return f.status === 'NOT_FOUND' || (f.status === undefined && f.httpStatus === 404);
};

/** 409 ALREADY_EXISTS, not 409 ABORTED (a concurrency conflict, which is worth a retry). */
export const isAlreadyExists = (error: unknown): boolean => {
  const f = googleFailure(error);
  return f.status === 'ALREADY_EXISTS' || (f.status === undefined && f.httpStatus === 409);
};

/** Throttling, 5xx, a timeout, or no answer at all: the same call may work later. */
export function isTransient(error: unknown): boolean {
  if (error instanceof LauncherUnavailableError) return true;
  if (error instanceof LaunchRejectedError) return false;
  const f = googleFailure(error);
  if (f.status !== undefined && TRANSIENT_STATUS.has(f.status)) return true;
  const s = f.httpStatus;
  return s === undefined || s === 408 || s === 429 || s >= 500;
}

const clip = (text: string, max = 300): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/**
 * Translate a Google API failure into a domain error: transient ones
 * (throttling, 5xx, no answer) become LauncherUnavailableError, the rest
 * LaunchRejectedError. The message names the service, the action and
 * Google's status and words, never the request.
 *
 * `quote: false` leaves Google's words and the original error out: for calls
 * whose request carried a secret value (Secret Manager `addVersion`), where
 * the SDK error's `config` holds the request body and nothing of it may
 * travel on in `cause`.
 *
 * @example
 * try { await jobs.getJob({ name }) } catch (e) { throw googleError(e, 'Cloud Run', 'GetJob') }
 */
export function googleError(
  error: unknown,
  service: string,
  action: string,
  options: { readonly quote?: boolean } = {},
): DomainError {
  if (error instanceof LaunchRejectedError || error instanceof LauncherUnavailableError) return error;
  const quote = options.quote !== false;
  const f = googleFailure(error);
  const code = [f.httpStatus, f.status].filter((x) => x !== undefined).join(' ');
  const words = quote && f.message !== undefined ? clip(f.message) : undefined;
  const said = [code === '' ? 'no answer' : code, words].filter((x) => x !== undefined).join(': ');
  // Unquoted, a quota answer still says so (and nothing of the request), so the run waits instead of failing.
  const throttled = f.httpStatus === 429 || f.status === 'RESOURCE_EXHAUSTED';
  const cause = quote
    ? { cause: error }
    : throttled
      ? { cause: Object.assign(new Error('RESOURCE_EXHAUSTED'), { name: 'RESOURCE_EXHAUSTED', status: 429 }) }
      : {};
  return isTransient(error)
    ? new LauncherUnavailableError(`${service} ${action} failed, will retry (${said})`, cause)
    : new LaunchRejectedError(`${service} ${action} was refused (${said})`, cause);
}
