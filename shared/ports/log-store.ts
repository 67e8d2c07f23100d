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

export interface LogReader {
  read(runId: string, options?: { cursor?: string; limit?: number }): Promise<LogPage>;
}

export interface LogStore extends LogReader {
  append(runId: string, lines: readonly LogLineInput[]): Promise<void>;
}
