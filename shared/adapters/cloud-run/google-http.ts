import { backoffMs } from '../../lib/backoff.ts';
import { sleep } from '../../lib/sleep.ts';
import { withRetry } from '../retry.ts';
import { googleFailure, isTransient } from './errors.ts';

/**
 * The one thing the launcher needs for the Google REST APIs that have no
 * client in this project (Cloud Logging `entries:list`, Secret Manager): an
 * authorised request. A `google-auth-library` `GoogleAuth` or `AuthClient`
 * (the same one the Cloud Run clients use) fits as is.
 *
 * @example
 * const http: AuthorizedHttp = new GoogleAuth({ scopes: 'https://www.googleapis.com/auth/cloud-platform' });
 * const { data } = await http.request<{ entries?: unknown[] }>({ url, method: 'POST', data: body });
 */
export interface AuthorizedHttp {
  request<T>(options: {
    url: string;
    method: 'GET' | 'POST' | 'DELETE';
    data?: Readonly<Record<string, unknown>>;
    timeout?: number;
  }): Promise<{ readonly data: T }>;
}

/** Backoff for calls nobody else retries (neither the Cloud Run SDK over REST nor gaxios retry 429/503). */
export interface RetryTuning {
  /** Tries in all, the first included; default 4. */
  readonly attempts?: number;
  /** Base delay in ms (default 200); tests pass 1. */
  readonly baseMs?: number;
  readonly maxMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** `call`, tried again on throttling, 5xx and no answer, honouring `Retry-After`. */
export function retrying<T>(call: () => Promise<T>, tuning: RetryTuning = {}): Promise<T> {
  return withRetry(call, {
    retryable: isTransient,
    retryAfterMs: (error) => googleFailure(error).retryAfterMs,
    ...tuning,
  });
}

/** The pause `retrying` makes before try `attempt + 1`, for the one call that must not go through it (RunJob). */
export function retryPause(attempt: number, tuning: RetryTuning = {}): Promise<void> {
  const ms = backoffMs(attempt - 1, {
    baseMs: tuning.baseMs ?? 200,
    maxMs: tuning.maxMs ?? 5000,
    jitter: Math.random,
  });
  return (tuning.sleep ?? sleep)(ms);
}

/** `https://host` without a trailing slash, so paths can be appended. */
export const baseUrl = (endpoint: string): string => endpoint.replace(/\/+$/, '');
