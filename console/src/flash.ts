import type { BatchSubmitted } from './api/client.ts';
import { navigate } from './router.ts';

/**
 * What a page that navigates away wants the next page to say (a batch's
 * per-target refusals after queueing). Held in memory, so it is said once and
 * nothing of it lands in the URL.
 */
export interface Flash {
  readonly batchId: string;
  readonly failed: BatchSubmitted['failed'];
  readonly queued: number;
}

let pending: Flash | undefined;

/** After queueing a batch (or a retry of one): open its page, which then says what was queued and refused. */
export function openQueuedBatch(submitted: BatchSubmitted): void {
  pending = { batchId: submitted.batchId, failed: submitted.failed, queued: submitted.runs.length };
  navigate(`/batches/${encodeURIComponent(submitted.batchId)}`);
}

export function takeFlash(batchId: string): Flash | undefined {
  if (pending?.batchId !== batchId) return undefined;
  const flash = pending;
  pending = undefined;
  return flash;
}
