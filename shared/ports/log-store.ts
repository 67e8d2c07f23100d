/**
 * Redacted run output. Writers append lines as they arrive; readers page
 * forward with an opaque cursor so a client can follow a run.
 *
 * @example
 * await logs.append(runId, [{ stream: 'stdout', text: 'PLAY [all]' }]);
 * const page = await logs.read(runId, { cursor });
 */
export type LogStream = 'stdout' | 'stderr' | 'system';

export interface LogLineInput {
  readonly stream: LogStream;
  readonly text: string;
  /** ISO timestamp; the store's clock when absent. */
  readonly at?: string;
}

export interface LogLine {
  readonly seq: number;
  readonly at: string;
  readonly stream: LogStream;
  readonly text: string;
}

export interface LogPage {
  readonly lines: readonly LogLine[];
  /** Pass back to continue after the last line; unchanged when nothing new arrived. */
  readonly nextCursor: string;
}

/**
 * Most lines one page of run output carries, on every backend and through
 * `GET /runs/{id}/logs?limit=`: Cloud Logging's `entries:list` answers at most
 * 1,000 entries and ACI keeps about the last 1,000 lines, the tightest of the
 * log services, so every reader fills a page with one backend call.
 */
export const LOG_PAGE_MAX_LINES = 1000;
/** Lines a page carries when the reader asks for no `limit`. */
export const LOG_PAGE_DEFAULT_LINES = 500;

/**
 * The page size a reader uses: `limit` (a positive integer) capped at
 * LOG_PAGE_MAX_LINES, or the default. Undefined when `limit` is not a positive
 * integer, so each reader reports it in its own words.
 */
export function logPageSize(limit: number | undefined): number | undefined {
  if (limit === undefined) return LOG_PAGE_DEFAULT_LINES;
  if (!Number.isInteger(limit) || limit < 1) return undefined;
  return Math.min(limit, LOG_PAGE_MAX_LINES);
}

export interface LogReader {
  /** At most `limit` lines (default LOG_PAGE_DEFAULT_LINES, never more than LOG_PAGE_MAX_LINES). */
  read(runId: string, options?: { cursor?: string; limit?: number }): Promise<LogPage>;
}

export interface LogStore extends LogReader {
  append(runId: string, lines: readonly LogLineInput[]): Promise<void>;
}
