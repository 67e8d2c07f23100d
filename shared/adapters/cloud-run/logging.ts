import { decodeJsonCursor, encodeJsonCursor } from '../../domain/cursor.ts';
import { ValidationError } from '../../domain/errors.ts';
import { shimLineStream } from '../../domain/shim-protocol.ts';
import type { LogLine, LogPage, LogStream } from '../../ports/log-store.ts';
import { LOG_PAGE_DEFAULT_LINES, logPageSize } from '../../ports/log-store.ts';
import { googleError } from './errors.ts';
import { type AuthorizedHttp, baseUrl, type RetryTuning, retrying } from './google-http.ts';
import type { CloudRunHandle } from './handle.ts';

/** The fields of Cloud Logging's LogEntry that are read here. */
interface LogEntry {
  readonly logName?: string;
  readonly timestamp?: string;
  readonly insertId?: string;
  readonly textPayload?: string;
  readonly jsonPayload?: Readonly<Record<string, unknown>>;
}

interface EntriesPage {
  readonly entries?: readonly LogEntry[];
  readonly nextPageToken?: string;
}

/** Where a reader stands: the last entry handed out, and how many lines came before. */
interface Position {
  /** The last entry's timestamp exactly as Cloud Logging wrote it (it goes back into the filter). */
  readonly t?: string;
  readonly i?: string;
  readonly n: number;
}

/** entries:list answers at most 1,000 entries a page. */
const MAX_PAGE_SIZE = 1000;
/**
 * entries:list may answer a page with no entries and a token while it is
 * still scanning; and with the `>=` guard below, a page can hold only entries
 * already seen. Follow a few such pages before answering "nothing new".
 */
const MAX_PAGES = 5;

export interface CloudRunLogsOptions {
  readonly http: AuthorizedHttp;
  /** Default `https://logging.googleapis.com`; tests point it at a fake. */
  readonly endpoint?: string;
  /** Entries per entries:list call when `read` is given no `limit`; default LOG_PAGE_DEFAULT_LINES, at most 1,000. */
  readonly pageSize?: number;
  readonly retry?: RetryTuning;
}

/**
 * A Cloud Run execution's output, read from Cloud Logging with `entries:list`:
 * `resource.type="cloud_run_job"`, the job's name and region, and the
 * execution's `run.googleapis.com/execution_name` label, oldest first.
 *
 * Cursor: the (timestamp, insertId) of the last entry handed out. Cloud
 * Logging orders entries by timestamp and, within one timestamp, by insertId,
 * so the next read asks for `timestamp > T OR (timestamp = T AND insertId > I)`
 * and also drops anything not after the cursor itself: lines appended while
 * the job runs show up on the next call, none twice. Cloud Logging keeps the
 * entries after the job is deleted (for the log bucket's retention, 30 days
 * in `_Default`), so reads work after cleanup with no archive. An entry that
 * reaches Logging later than entries stamped after it (ingestion delay of a
 * few seconds is possible) is missed by a follower that already passed its
 * timestamp; the shim's stdout comes from one container and is stamped in
 * order, which keeps this rare.
 *
 * @example
 * const logs = new CloudRunLogs({ http: auth });
 * let page = await logs.read(handle, run.createdAt);
 * page = await logs.read(handle, run.createdAt, page.nextCursor); // only what arrived since
 */
export class CloudRunLogs {
  readonly #o: CloudRunLogsOptions;
  readonly #url: string;
  readonly #pageSize: number;

  constructor(options: CloudRunLogsOptions) {
    const pageSize = options.pageSize ?? LOG_PAGE_DEFAULT_LINES;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
      throw new RangeError(`pageSize must be 1..${MAX_PAGE_SIZE}`);
    }
    this.#o = options;
    this.#pageSize = pageSize;
    this.#url = `${baseUrl(options.endpoint ?? 'https://logging.googleapis.com')}/v2/entries:list`;
  }

  /**
   * `since`: no entry of this execution is older (the run's creation time).
   * At most `limit` lines (capped at LOG_PAGE_MAX_LINES, which is also
   * entries:list's own page cap, so one call can fill the page).
   */
  async read(h: CloudRunHandle, since: string, cursor?: string, limit?: number): Promise<LogPage> {
    const pageSize = limit === undefined ? this.#pageSize : (logPageSize(limit) ?? this.#pageSize);
    const from = cursor === undefined ? { n: 0 } : decodeCursor(cursor);
    const unchanged: LogPage = { lines: [], nextCursor: cursor ?? encodeCursor(from) };
    const filter = [
      'resource.type="cloud_run_job"',
      `resource.labels.job_name=${quote(h.jobId)}`,
      `resource.labels.location=${quote(h.region)}`,
      `labels."run.googleapis.com/execution_name"=${quote(h.executionId)}`,
      from.t === undefined || from.i === undefined
        ? `timestamp>=${quote(lowerBound(since))}`
        : `(timestamp>${quote(from.t)} OR (timestamp=${quote(from.t)} AND insertId>${quote(from.i)}))`,
    ].join(' AND ');

    let pageToken: string | undefined;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      let answer: EntriesPage;
      try {
        ({ data: answer } = await retrying(
          () =>
            this.#o.http.request<EntriesPage>({
              url: this.#url,
              method: 'POST',
              data: {
                resourceNames: [`projects/${h.project}`],
                filter,
                orderBy: 'timestamp asc',
                pageSize,
                ...(pageToken === undefined ? {} : { pageToken }),
              },
            }),
          this.#o.retry,
        ));
      } catch (error) {
        throw googleError(error, 'Cloud Logging', 'entries:list');
      }
      const fresh = (answer.entries ?? []).filter(
        (e) => e.timestamp !== undefined && e.insertId !== undefined && after(e, from),
      );
      if (fresh.length > 0) {
        const lines: LogLine[] = fresh.map((e, k) => ({
          seq: from.n + k + 1,
          at: isoMillis(e.timestamp!),
          stream: streamOf(e),
          text: textOf(e),
        }));
        const last = fresh.at(-1)!;
        return {
          lines,
          nextCursor: encodeCursor({ t: last.timestamp!, i: last.insertId!, n: from.n + lines.length }),
        };
      }
      pageToken = answer.nextPageToken === '' ? undefined : answer.nextPageToken;
      if (pageToken === undefined) break;
    }
    return unchanged;
  }
}

/** A Logging filter string literal. */
const quote = (text: string): string => JSON.stringify(text);

/** A minute before `since`, for clock skew between the control plane and Google. */
function lowerBound(since: string): string {
  const ms = Date.parse(since);
  return Number.isNaN(ms) ? '1970-01-01T00:00:00Z' : new Date(ms - 60_000).toISOString();
}

/** RFC 3339 timestamp as a string that sorts in time order (nanosecond precision, UTC). */
function timeKey(timestamp: string): string {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/.exec(timestamp);
  if (m !== null) return `${m[1]}.${(m[2] ?? '').padEnd(9, '0')}`;
  const ms = Date.parse(timestamp);
  // An offset other than Z: milliseconds are what Date keeps.
  return Number.isNaN(ms) ? timestamp : `${new Date(ms).toISOString().slice(0, 23)}000000`;
}

function after(e: LogEntry, from: Position): boolean {
  if (from.t === undefined || from.i === undefined) return true;
  const a = timeKey(e.timestamp!);
  const b = timeKey(from.t);
  return a > b || (a === b && e.insertId! > from.i);
}

function isoMillis(timestamp: string): string {
  const ms = Date.parse(timestamp.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isNaN(ms) ? timestamp : new Date(ms).toISOString();
}

function streamOf(e: LogEntry): LogStream {
  const log = decodeURIComponent(e.logName ?? '');
  if (log.endsWith('/stderr')) return 'stderr';
  if (log.endsWith('/stdout')) return shimLineStream(textOf(e));
  // run.googleapis.com/varlog/system and friends: Cloud Run's own words about the task.
  return 'system';
}

/** Cloud Run turns a stdout line that is a JSON object into `jsonPayload`; show it as its message or as JSON. */
function textOf(e: LogEntry): string {
  if (e.textPayload !== undefined) return e.textPayload;
  const json = e.jsonPayload;
  if (json === undefined) return '';
  return typeof json.message === 'string' && Object.keys(json).length === 1
    ? json.message
    : JSON.stringify(json);
}

const encodeCursor = (position: Position): string => encodeJsonCursor(position);

function decodeCursor(cursor: string): Position {
  try {
    const p = decodeJsonCursor(cursor) as Partial<Position>;
    const ok =
      typeof p.n === 'number' &&
      Number.isSafeInteger(p.n) &&
      p.n >= 0 &&
      (p.t === undefined || typeof p.t === 'string') &&
      (p.i === undefined || typeof p.i === 'string');
    if (ok) return p as Position;
  } catch {
    // fall through
  }
  throw new ValidationError('cursor is not one this log reader handed out', [
    { path: 'cursor', message: 'unknown cursor' },
  ]);
}
