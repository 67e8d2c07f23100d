import { backoffMs } from '../lib/backoff.ts';
import { sleep } from '../lib/sleep.ts';

/**
 * Retry with capped exponential backoff and full jitter, for SDKs that do not
 * retry throttling or 5xx themselves (Cloud Run over REST, the Kubernetes
 * client). The caller says which failures are worth another try and may say
 * how long the server asked it to wait (`Retry-After`).
 *
 * @example
 * const job = await withRetry(() => jobs.getJob({ name }), {
 *   retryable: (e) => statusOf(e) === 429 || statusOf(e) >= 500,
 * });
 */
export interface RetryOptions {
  /** True when this failure may succeed on another try. */
  readonly retryable: (error: unknown) => boolean;
  /** Milliseconds the server asked to wait before the next try, when it said so. */
  readonly retryAfterMs?: (error: unknown) => number | undefined;
  /** Tries in all, the first included; default 4. */
  readonly attempts?: number;
  /** Base delay; the n-th retry waits up to base × 2^(n-1), default 200 ms. */
  readonly baseMs?: number;
  /** Ceiling of one wait, default 5 s. */
  readonly maxMs?: number;
  /** Injected in tests. */
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
}

export async function withRetry<T>(call: () => Promise<T>, options: RetryOptions): Promise<T> {
  const attempts = Math.max(1, options.attempts ?? 4);
  const baseMs = options.baseMs ?? 200;
  const maxMs = options.maxMs ?? 5000;
  const pause = options.sleep ?? sleep;
  const random = options.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= attempts || !options.retryable(error)) throw error;
      const backoff = backoffMs(attempt - 1, { baseMs, maxMs, jitter: random });
      const asked = options.retryAfterMs?.(error);
      await pause(asked === undefined ? backoff : Math.min(maxMs, Math.max(asked, backoff)));
    }
  }
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(
  value: string | null | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  if (value === undefined || value === null || value.trim() === '') return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
