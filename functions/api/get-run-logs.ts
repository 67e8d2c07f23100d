import { getRun } from '../../shared/app/runs.ts';
import { lambdaHttpHandler } from '../../shared/composition/lambda.ts';
import { isTerminal } from '../../shared/domain/run.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { LogsQuery } from '../../shared/http/query-schemas.ts';
import { IdParams } from '../../shared/http/schemas.ts';

/**
 * GET /runs/{id}/logs?cursor=&limit= — at most `limit` lines (LOG_PAGE_MAX_LINES
 * at most, on every backend) of redacted output after `cursor` and the next
 * cursor, read through the run's backend (relay store, CloudWatch Logs …).
 * `complete` tells a follower that the run has ended and nothing more
 * will arrive once this page is empty.
 */
export const makeGetRunLogs = (deps: ApiDeps) =>
  httpHandler(deps, {
    params: IdParams,
    query: LogsQuery,
    handle: async ({ params, query }) => {
      // Read the state first: a terminal state seen here means every line was written before this read.
      const run = await getRun(deps, params.id);
      // Each backend keeps output in its own log service; before a launch there is only ours.
      const handle = run.launch?.handle;
      const launcher = run.launch === undefined ? undefined : deps.launchers[run.launch.backend];
      const page =
        launcher !== undefined && handle !== undefined
          ? await launcher.logs(handle, run, query.cursor, query.limit)
          : await deps.logs.read(run.id, {
              limit: query.limit,
              ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
            });
      return json(200, { runId: run.id, state: run.state, complete: isTerminal(run.state), ...page });
    },
  });

export const handler = lambdaHttpHandler(makeGetRunLogs);
