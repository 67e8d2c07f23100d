import {
  CloudWatchLogsClient,
  GetLogEventsCommand,
  type GetLogEventsCommandOutput,
} from '@aws-sdk/client-cloudwatch-logs';
import { decodeJsonCursor, encodeJsonCursor, invalidCursor } from '../../domain/cursor.ts';
import { ValidationError } from '../../domain/errors.ts';
import { once } from '../../lib/once.ts';
import { type LogLine, type LogPage, type LogReader, logPageSize } from '../../ports/log-store.ts';

/**
 * GetLogEvents may answer an empty page with a new token while events lie
 * further on (it scans the stream in time slices); follow a few such pages
 * before answering "nothing new".
 */
const MAX_EMPTY_PAGES = 5;

/** Where a reader stands: the stream it read, CloudWatch's forward token in it, and lines read so far. */
interface Position {
  /** Stream the token belongs to; a token is meaningless in another stream (a relaunch writes a new one). */
  readonly s?: string;
  readonly t?: string;
  /** Lines before this position, so `seq` keeps counting across pages. */
  readonly n: number;
}

/** One client per cold start, shared by every reader built without an injected client. */
const defaultClient = once((): CloudWatchLogsClient => new CloudWatchLogsClient({}));

export interface CloudWatchLogReaderOptions {
  readonly logGroup: string;
  /**
   * The stream holding a run's output, or undefined while it has none (not
   * launched yet). Whoever launches the task knows its id (the ECS launcher
   * stores it in the run's launch handle).
   */
  readonly streamFor: (runId: string) => string | undefined | Promise<string | undefined>;
  /** Defaults to one client per process, configured from the environment (AWS_REGION, AWS_ENDPOINT_URL …). */
  readonly client?: CloudWatchLogsClient;
}

/**
 * LogReader over CloudWatch Logs streams written by the ECS `awslogs` driver,
 * read forward from the head with GetLogEvents. The cursor wraps CloudWatch's
 * `nextForwardToken` (which stays the same at the end of a stream, so an idle
 * follower gets its cursor back unchanged) with the stream name and a line
 * count: `seq` numbers lines from 1 in the order CloudWatch returns them.
 *
 * awslogs merges stdout and stderr into one stream, so every line reads as
 * `stdout`; `at` is the event's timestamp. A stream that does not exist yet
 * (the task has not started) reads as empty.
 *
 * @example
 * const logs = new CloudWatchLogReader({
 *   logGroup: '/remote-worker/runs',
 *   streamFor: async (runId) => streamOf(await store.getRun(runId)),
 * });
 * let page = await logs.read(runId);
 * page = await logs.read(runId, { cursor: page.nextCursor }); // only what arrived since
 */
export class CloudWatchLogReader implements LogReader {
  readonly #client: CloudWatchLogsClient;
  readonly #logGroup: string;
  readonly #streamFor: CloudWatchLogReaderOptions['streamFor'];

  constructor(options: CloudWatchLogReaderOptions) {
    if (options.logGroup.length === 0) throw new ValidationError('logGroup must not be empty');
    this.#client = options.client ?? defaultClient();
    this.#logGroup = options.logGroup;
    this.#streamFor = options.streamFor;
  }

  async read(runId: string, options: { cursor?: string; limit?: number } = {}): Promise<LogPage> {
    const limit = logPageSize(options.limit);
    if (limit === undefined) {
      throw new ValidationError('limit must be a positive integer', [
        { path: 'limit', message: 'must be a positive integer' },
      ]);
    }
    const from = options.cursor === undefined ? { n: 0 } : decodeCursor(options.cursor);
    const unchanged: LogPage = { lines: [], nextCursor: options.cursor ?? encodeCursor(from) };
    const stream = await this.#streamFor(runId);
    if (stream === undefined) return unchanged;

    let token = from.s === stream ? from.t : undefined;
    for (let page = 0; page < MAX_EMPTY_PAGES; page += 1) {
      let answer: GetLogEventsCommandOutput;
      try {
        answer = await this.#client.send(
          new GetLogEventsCommand({
            logGroupName: this.#logGroup,
            logStreamName: stream,
            startFromHead: true,
            // GetLogEvents takes up to 10,000; the page cap is the same on every backend.
            limit,
            ...(token === undefined ? {} : { nextToken: token }),
          }),
        );
      } catch (error) {
        const name = error instanceof Error ? error.name : '';
        if (name === 'ResourceNotFoundException') return unchanged;
        // A token that passed our checks but not CloudWatch's was forged or belongs to a deleted stream.
        if (name === 'InvalidParameterException' && token !== undefined) throw invalidCursor();
        throw error;
      }
      const events = answer.events ?? [];
      const next = answer.nextForwardToken;
      if (events.length > 0) {
        const lines: LogLine[] = events.map((event, i) => ({
          seq: from.n + i + 1,
          at: new Date(event.timestamp ?? Date.now()).toISOString(),
          stream: 'stdout',
          text: event.message ?? '',
        }));
        const position: Position = {
          s: stream,
          ...(next === undefined ? {} : { t: next }),
          n: from.n + lines.length,
        };
        return { lines, nextCursor: encodeCursor(position) };
      }
      if (next === undefined || next === token) return unchanged;
      token = next;
    }
    // Still scanning empty time slices: keep the progress so the next read starts further on.
    return {
      lines: [],
      nextCursor: encodeCursor({ s: stream, ...(token === undefined ? {} : { t: token }), n: from.n }),
    };
  }
}

const encodeCursor = (position: Position): string => encodeJsonCursor(position);

const isShortText = (value: unknown): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= 1024;

/** Only a cursor this reader made passes: the right fields, the right types, and it re-encodes to itself. */
function decodeCursor(cursor: string): Position {
  const { s, t, n, ...rest } = decodeJsonCursor(cursor);
  if (
    Object.keys(rest).length > 0 ||
    (s !== undefined && !isShortText(s)) ||
    (t !== undefined && !isShortText(t)) ||
    typeof n !== 'number' ||
    !Number.isSafeInteger(n) ||
    n < 0
  ) {
    throw invalidCursor();
  }
  const position: Position = {
    ...(s === undefined ? {} : { s }),
    ...(t === undefined ? {} : { t }),
    n,
  };
  if (encodeCursor(position) !== cursor) throw invalidCursor();
  return position;
}
