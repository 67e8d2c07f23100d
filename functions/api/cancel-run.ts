import { cancelRun } from '../../shared/app/runs.ts';
import { lambdaHttpHandler } from '../../shared/composition/lambda.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { IdParams, runView } from '../../shared/http/schemas.ts';

/** POST /runs/{id}/cancel — answered with the run; a finished run is refused with 409 invalid-transition. */
export const makeCancelRun = (deps: ApiDeps) =>
  httpHandler(deps, {
    params: IdParams,
    handle: async ({ params }) => json(202, runView(await cancelRun(deps, params.id))),
  });

export const handler = lambdaHttpHandler(makeCancelRun);
