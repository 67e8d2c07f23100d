import { isTerminal, type Run, type RunState } from './run.ts';

/**
 * The start-latency record of a run, derived from its state history: when it
 * was queued, claimed by a dispatcher, launched on a backend, seen running and
 * ended, and the durations between. Nothing extra is stored: the history is
 * the record, so every backend gets this for free.
 *
 * Each timestamp is the FIRST time the run entered that state: a run claimed,
 * put back and claimed again counts its wait from the first claim, which is
 * when it stopped merely waiting in the queue. Durations are whole
 * milliseconds, never negative (writers' clocks can differ by a few ms), and
 * absent until both ends are known.
 */
export interface RunTimings {
  readonly queuedAt: string;
  readonly claimedAt?: string;
  readonly launchedAt?: string;
  readonly runningAt?: string;
  readonly endedAt?: string;
  /** queued → claimed: time spent waiting for a dispatcher. */
  readonly queueWaitMs?: number;
  /** claimed → launched: the backend accepting the task (image pull and scheduling come after, on most backends). */
  readonly launchLatencyMs?: number;
  /** queued → running (or launched, when the run ended before anyone saw it running): the wait a caller feels. */
  readonly startLatencyMs?: number;
  /** running (or launched) → ended. */
  readonly runTimeMs?: number;
  /** A run that ended without ever being launched: why (refused, cancelled before start, dispatch failure). */
  readonly notStartedReason?: string;
}

const firstAt = (run: Pick<Run, 'history'>, state: RunState): string | undefined =>
  run.history.find((h) => h.state === state)?.at;

const between = (from: string | undefined, to: string | undefined): number | undefined => {
  if (from === undefined || to === undefined) return undefined;
  const ms = Date.parse(to) - Date.parse(from);
  return Number.isFinite(ms) ? Math.max(0, Math.round(ms)) : undefined;
};

/**
 * @example
 * runTimings(run) // { queuedAt: '…:00.000Z', claimedAt: '…:00.120Z', queueWaitMs: 120, … }
 */
export function runTimings(run: Pick<Run, 'history' | 'createdAt' | 'state' | 'reason'>): RunTimings {
  const queuedAt = firstAt(run, 'queued') ?? run.createdAt;
  const claimedAt = firstAt(run, 'dispatching');
  const launchedAt = firstAt(run, 'launched');
  const runningAt = firstAt(run, 'running');
  const endedAt = isTerminal(run.state) ? run.history.findLast((h) => h.state === run.state)?.at : undefined;
  const startedAt = runningAt ?? launchedAt;
  const fields: Record<string, string | number | undefined> = {
    queuedAt,
    claimedAt,
    launchedAt,
    runningAt,
    endedAt,
    queueWaitMs: between(queuedAt, claimedAt),
    launchLatencyMs: between(claimedAt, launchedAt),
    startLatencyMs: between(queuedAt, startedAt),
    runTimeMs: between(startedAt, endedAt),
    notStartedReason: endedAt !== undefined && launchedAt === undefined ? run.reason : undefined,
  };
  return Object.fromEntries(
    Object.entries(fields).filter(([, v]) => v !== undefined),
  ) as unknown as RunTimings;
}
