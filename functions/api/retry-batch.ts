import { retryBatch } from '../../shared/app/batches.ts';
import { submitHttpHandler } from '../../shared/composition/lambda/submits.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { batchSubmittedView, IdParams } from '../../shared/http/schemas.ts';

/**
 * POST /batches/{id}/retry: the same request for the targets whose runs ended
 * failed, refused, timed_out or cancelled, as a new batch with `retryOf` set.
 * Answers like POST /batches; 409 nothing-to-retry when no run qualifies.
 */
export const makeRetryBatch = (deps: ApiDeps) =>
  httpHandler(deps, {
    params: IdParams,
    handle: async ({ params, principal }) => {
      const batch = await retryBatch(deps, params.id, principal);
      return json(batch.runs.length > 0 ? 202 : 200, batchSubmittedView(batch), {
        location: `/batches/${batch.batchId}`,
      });
    },
  });

export const handler = submitHttpHandler(makeRetryBatch);
