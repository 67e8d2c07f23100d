import { getRun } from '../../shared/app/runs.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { IdParams, runView } from '../../shared/http/schemas.ts';
import type { ApiDeps } from './deps.ts';

/** GET /runs/{id} */
export const makeGetRun = (deps: ApiDeps) =>
  httpHandler(deps, {
    params: IdParams,
    handle: async ({ params }) => json(200, runView(await getRun(deps, params.id))),
  });
