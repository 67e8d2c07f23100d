import { getBatch } from '../../shared/app/batches.ts';
import { type TableApiDeps, tableHttpHandler } from '../../shared/composition/lambda/tables.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { IdParams } from '../../shared/http/schemas.ts';

/** GET /batches/{id}: counts per state, `complete` once every run is terminal, failures by target. */
export const makeGetBatch = (deps: TableApiDeps) =>
  httpHandler(deps, {
    params: IdParams,
    handle: async ({ params }) => json(200, await getBatch(deps, params.id)),
  });

export const handler = tableHttpHandler(makeGetBatch);
