/**
 * Structured logging as the use cases and adapters see it: a message and
 * fields, one JSON line each. The composition roots build the one
 * implementation (Powertools' Logger, which satisfies this structurally);
 * tests pass a silent or recording one. Fields never carry a secret value.
 *
 * @example
 * deps.logger.warn('dispatch: launch refused', { runId, reason });
 */
export interface Logger {
  debug(message: string, ...fields: LogFields[]): void;
  info(message: string, ...fields: LogFields[]): void;
  warn(message: string, ...fields: LogFields[]): void;
  error(message: string, ...fields: LogFields[]): void;
}

/** Extra fields of a log line: attributes, or the error it is about. */
export type LogFields = Record<string, unknown> | Error | string;
