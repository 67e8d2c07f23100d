import type { SubmittedBatch } from '../app/batches.ts';
import { maskPasswordVars } from '../domain/redaction.ts';
import type { Run } from '../domain/run.ts';
import { type RunTimings, runTimings } from '../domain/run-timings.ts';
import { TargetIdSchema } from '../domain/target.ts';
import * as z from '../lib/zod.ts';

export const IdParams = z.object({ id: z.textBetween(1, 128) });
export const TargetIdParams = z.object({ id: TargetIdSchema });

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
