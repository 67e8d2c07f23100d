/**
 * A structured logger that writes one JSON line per entry to stdout, in the
 * shape Powertools' Logger writes (`level`, `message`, `timestamp`,
 * `service`, `xray_trace_id` when Lambda sets one, then the entry's fields;
 * an Error becomes `error: { name, location, message, stack }`), so a log
 * query written for one reads the other.
 *
 * Hand-written because the library is the cost: loading and constructing
 * Powertools' Logger (its formatter, its environment service, mnemonist's
 * LRU for log buffering) is about 10 ms of a Lambda cold start and 80 KiB
 * of its bundle, and the API functions use none of what it adds (sampling,
 * buffering, persistent keys, context injection). It satisfies the Logger
 * port (shared/ports/logger.ts) structurally; functions that use Powertools'
 * other utilities keep its Logger.
 *
 * @example
 * const logger = jsonLineLogger({ service: 'remote-worker', level: 'INFO' });
 * logger.warn('dispatch: launch refused', { runId, reason });
 * // {"level":"WARN","message":"dispatch: launch refused","timestamp":"…","service":"remote-worker","runId":"…","reason":"…"}
 */

export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

type Fields = Record<string, unknown> | Error | string;

export interface JsonLineLoggerOptions {
  readonly service: string;
  readonly level: LogLevel;
  /** Where each line goes; stdout unless a test records them. */
  readonly write?: (line: string) => void;
  /** Read once per entry for the X-Ray trace id (`_X_AMZN_TRACE_ID`); process.env unless given. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export interface JsonLineLogger {
  debug(message: string, ...fields: Fields[]): void;
  info(message: string, ...fields: Fields[]): void;
  warn(message: string, ...fields: Fields[]): void;
  error(message: string, ...fields: Fields[]): void;
}

/** The first frame of a stack that is not the error line itself: `file:line`, as Powertools reports it. */
function locationOf(stack: string | undefined): string {
  const frame = /\(?([^\s(]+:\d+):\d+\)?$/m.exec(stack?.split('\n').slice(1).join('\n') ?? '');
  return frame?.[1] ?? '';
}

function formatError(error: Error): Record<string, unknown> {
  return {
    name: error.name,
    location: locationOf(error.stack),
    message: error.message,
    stack: error.stack,
    ...(error.cause === undefined
      ? {}
      : { cause: error.cause instanceof Error ? formatError(error.cause) : error.cause }),
  };
}

/** JSON.stringify's replacer: errors formatted, bigints as text, a repeated (circular) object dropped. */
function replacer(): (key: string, value: unknown) => unknown {
  const seen = new WeakSet<object>();
  return (_key, value) => {
    if (value instanceof Error) return formatError(value);
    if (typeof value === 'bigint') return value.toString();
    if (typeof value === 'object' && value !== null) {
      if (seen.has(value)) return undefined;
      seen.add(value);
    }
    return value;
  };
}

function merge(entry: Record<string, unknown>, fields: readonly Fields[]): void {
  for (const field of fields) {
    if (typeof field === 'string') entry.extra = field;
    else if (field instanceof Error) entry.error = field;
    else Object.assign(entry, field);
  }
}

export function jsonLineLogger(options: JsonLineLoggerOptions): JsonLineLogger {
  const threshold = LOG_LEVELS.indexOf(options.level);
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const env = options.env ?? process.env;
  const log =
    (level: Exclude<LogLevel, 'SILENT'>) =>
    (message: string, ...fields: Fields[]): void => {
      if (LOG_LEVELS.indexOf(level) < threshold) return;
      const trace = /Root=([^;]+)/.exec(env._X_AMZN_TRACE_ID ?? '')?.[1];
      const entry: Record<string, unknown> = {
        level,
        message,
        timestamp: new Date().toISOString(),
        service: options.service,
        ...(trace === undefined ? {} : { xray_trace_id: trace }),
      };
      merge(entry, fields);
      write(JSON.stringify(entry, replacer()));
    };
  return { debug: log('DEBUG'), info: log('INFO'), warn: log('WARN'), error: log('ERROR') };
}
