import { setTimeout as wait } from 'node:timers/promises';

/**
 * Wait `ms` milliseconds, or less when `signal` aborts: an abort ends the
 * wait early and is not an error (the caller looks at its signal next). The
 * one sleep of the project, on `node:timers/promises`.
 *
 * @example
 * while (!signal.aborted) {
 *   await poll();
 *   await sleep(pollMs, signal); // returns at once when the caller stops
 * }
 */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal === undefined) return wait(ms);
  if (signal.aborted) return;
  try {
    await wait(ms, undefined, { signal });
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}
