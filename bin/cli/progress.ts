import type { BatchRollup } from '../../shared/domain/batch.ts';
import { RUN_STATES } from '../../shared/domain/run.ts';
import type { Client } from './api-client.ts';
import type { Io } from './io.ts';

/** `2 running · 7 succeeded · 1 failed (10 total)`: non-zero states in lifecycle order. */
export function formatCounts(rollup: Pick<BatchRollup, 'counts' | 'total'>): string {
  const parts = RUN_STATES.flatMap((state) => {
    const n = rollup.counts[state] ?? 0;
    return n > 0 ? [`${n} ${state}`] : [];
  });
  return `${parts.join(' · ')} (${rollup.total} total)`;
}

/** Erase the line and return to its start: the progress line is redrawn in place. */
const REDRAW = '\r\u001b[2K';

export interface WatchOptions {
  readonly intervalMs: number;
  /** Redraw one line in place (a terminal) rather than print a line per change (a log file, a pipe). */
  readonly tty: boolean;
  /** Where the progress goes (stdout for humans; stderr when stdout carries --json). */
  readonly write: (text: string) => void;
}

/**
 * Poll `GET /batches/{id}` until every run is terminal, showing counts per
 * state: one line redrawn in place on a terminal, a new line per change
 * otherwise. Returns the final rollup.
 */
export async function watchBatch(
  client: Client,
  batchId: string,
  io: Io,
  options: WatchOptions,
): Promise<BatchRollup> {
  let last = '';
  for (;;) {
    const { body: rollup } = await client.request<BatchRollup>(
      'GET',
      `/batches/${encodeURIComponent(batchId)}`,
    );
    const line = `batch ${batchId}: ${formatCounts(rollup)}`;
    if (options.tty) options.write(`${REDRAW}${line}${rollup.complete ? '\n' : ''}`);
    else if (line !== last) options.write(`${line}\n`);
    last = line;
    if (rollup.complete) return rollup;
    await io.sleep(options.intervalMs);
  }
}
