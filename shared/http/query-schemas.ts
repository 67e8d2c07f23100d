import { RUN_STATES } from '../domain/run.ts';
import * as z from '../lib/zod.ts';
import { LOG_PAGE_DEFAULT_LINES, LOG_PAGE_MAX_LINES } from '../ports/log-store.ts';

/*
 * The query schemas of the two listing routes, apart from shared/http/schemas.ts
 * so that only the functions that list (ListRuns, GetRunLogs) build them when
 * they load: every other API function imports schemas.ts, and zod schemas at
 * a module's top level are built whether or not the function uses them.
 */

export const ListRunsQuery = z.strictObject({
  batchId: z.optional(z.textBetween(1, 128)),
  state: z.optional(z.enum(RUN_STATES)),
  limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(100)), 25),
  cursor: z.optional(z.textBetween(1, 512)),
});

/** The cap is every backend's reader's own (shared/ports/log-store.ts), so a page holds what `limit` asks. */
export const LogsQuery = z.strictObject({
  cursor: z.optional(z.textBetween(1, 512)),
  limit: z
    ._default(
      z.coerce.number().check(z.int(), z.minimum(1), z.maximum(LOG_PAGE_MAX_LINES)),
      LOG_PAGE_DEFAULT_LINES,
    )
    .check(
      z.describe(
        `Most lines in the page (1–${LOG_PAGE_MAX_LINES}, default ${LOG_PAGE_DEFAULT_LINES}), on every backend; a page may hold fewer while output is still arriving`,
      ),
    ),
});
