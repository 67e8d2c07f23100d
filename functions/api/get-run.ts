import { getRun } from '../../shared/app/runs.ts';
import { lambdaHttpHandler } from '../../shared/composition/lambda.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { IdParams, runView } from '../../shared/http/schemas.ts';

/** GET /runs/{id} */
export const makeGetRun = (deps: ApiDeps) =>
  httpHandler(deps, {
    params: IdParams,
    handle: async ({ params }) => json(200, runView(await getRun(deps, params.id))),
  });

export const handler = lambdaHttpHandler(makeGetRun);
