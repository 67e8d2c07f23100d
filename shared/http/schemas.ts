import type { SubmittedBatch } from '../app/batches.ts';
import { maskPasswordVars } from '../domain/redaction.ts';
import { RUN_STATES, type Run } from '../domain/run.ts';
import { type RunTimings, runTimings } from '../domain/run-timings.ts';
import { TargetIdSchema } from '../domain/target.ts';
import * as z from '../lib/zod.ts';
import { LOG_PAGE_DEFAULT_LINES, LOG_PAGE_MAX_LINES } from '../ports/log-store.ts';

export const IdParams = z.object({ id: z.textBetween(1, 128) });
export const TargetIdParams = z.object({ id: TargetIdSchema });

export const ListRunsQuery = z.strictObject({
  batchId: z.optional(z.textBetween(1, 128)),
  state: z.optional(z.enum(RUN_STATES)),
  limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(100)), 25),
  cursor: z.optional(z.textBetween(1, 512)),
});

/** The cap is every backend's reader's own (shared/ports/log-store.ts), so a page holds what `limit` asks. */
export const LogsQuery = z.strictObject({
  cursor: z.optional(z.textBetween(1, 512)),
  limit: z
    ._default(
      z.coerce.number().check(z.int(), z.minimum(1), z.maximum(LOG_PAGE_MAX_LINES)),
      LOG_PAGE_DEFAULT_LINES,
    )
    .check(
      z.describe(
        `Most lines in the page (1–${LOG_PAGE_MAX_LINES}, default ${LOG_PAGE_DEFAULT_LINES}), on every backend; a page may hold fewer while output is still arriving`,
      ),
    ),
});

/** The run as clients see it: internal claim bookkeeping stays inside; `timings` is derived from the history. */
export type RunView = Omit<Run, 'owner'> & { readonly timings: RunTimings };
export function runView(run: Run): RunView {
  const { owner: _owner, ...view } = run;
  return { ...view, extraVars: maskPasswordVars(run.extraVars), timings: runTimings(run) };
}

/** The answer of `POST /batches` and `POST /batches/{id}/retry`. */
export function batchSubmittedView(batch: SubmittedBatch) {
  return { ...batch, runs: batch.runs.map(runView) };
}
