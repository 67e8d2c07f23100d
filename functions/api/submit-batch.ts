import { submitBatch } from '../../shared/app/batches.ts';
import { submitHttpHandler } from '../../shared/composition/lambda/submits.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { SubmitBatchBody } from '../../shared/http/request-schemas.ts';
import { batchSubmittedView } from '../../shared/http/schemas.ts';

/**
 * POST /batches: one asset × 1–50 targets. A selection problem refuses the
 * whole request (422 selection-refused, nothing written). Otherwise 202 with
 * the queued `runs` and a `failed` list of targets the runner rules refused
 * (recorded as `refused` runs of the batch); 200 when every target was refused.
 */
export const makeSubmitBatch = (deps: ApiDeps) =>
  httpHandler(deps, {
    body: SubmitBatchBody,
    handle: async ({ body, principal }) => {
      const batch = await submitBatch(deps, body, principal);
      return json(batch.runs.length > 0 ? 202 : 200, batchSubmittedView(batch), {
        location: `/batches/${batch.batchId}`,
      });
    },
  });

export const handler = submitHttpHandler(makeSubmitBatch);
