/**
 * Exponential backoff: `baseMs × 2^exponent`, at most `maxMs`, times a jitter
 * factor in [0, 1) when `jitter` is given (full jitter: pass `Math.random`).
 * The one formula behind every retry pause (withRetry, the Cloud Run client,
 * the DynamoDB transaction retry, the poller's per-run pause).
 *
 * @example
 * // The n-th retry (n ≥ 1) of withRetry: up to 200 ms, 400 ms, 800 ms … never above 5 s.
 * await sleep(backoffMs(n - 1, { baseMs: 200, maxMs: 5000, jitter: Math.random }));
 */
export function backoffMs(
  exponent: number,
  options: { readonly baseMs: number; readonly maxMs?: number; readonly jitter?: () => number },
): number {
  const capped = Math.min(options.maxMs ?? Number.POSITIVE_INFINITY, options.baseMs * 2 ** exponent);
  return options.jitter === undefined ? capped : capped * options.jitter();
}
