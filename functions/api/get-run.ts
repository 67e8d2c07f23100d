import { getRun } from '../../shared/app/runs.ts';
import { type TableApiDeps, tableHttpHandler } from '../../shared/composition/lambda/tables.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { IdParams, runView } from '../../shared/http/schemas.ts';

/** GET /runs/{id} */
export const makeGetRun = (deps: TableApiDeps) =>
  httpHandler(deps, {
    params: IdParams,
    handle: async ({ params }) => json(200, runView(await getRun(deps, params.id))),
  });

export const handler = tableHttpHandler(makeGetRun);
