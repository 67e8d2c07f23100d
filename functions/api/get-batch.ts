import { getBatch } from '../../shared/app/batches.ts';
import { lambdaHttpHandler } from '../../shared/composition/lambda.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { IdParams } from '../../shared/http/schemas.ts';

/** GET /batches/{id}: counts per state, `complete` once every run is terminal, failures by target. */
export const makeGetBatch = (deps: ApiDeps) =>
  httpHandler(deps, {
    params: IdParams,
    handle: async ({ params }) => json(200, await getBatch(deps, params.id)),
  });

export const handler = lambdaHttpHandler(makeGetBatch);
