import { type TableApiDeps, tableHttpHandler } from '../../shared/composition/lambda/tables.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { ListRunsQuery } from '../../shared/http/query-schemas.ts';
import { runView } from '../../shared/http/schemas.ts';

/** GET /runs?batchId=&state=&limit=&cursor= — newest first. */
export const makeListRuns = (deps: TableApiDeps) =>
  httpHandler(deps, {
    query: ListRunsQuery,
    handle: async ({ query }) => {
      const page = await deps.store.listRuns(query as Parameters<typeof deps.store.listRuns>[0]);
      return json(200, {
        runs: page.runs.map(runView),
        ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
      });
    },
  });

export const handler = tableHttpHandler(makeListRuns);
