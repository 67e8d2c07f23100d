import { decodeSeqCursor, encodeSeqCursor } from '../../domain/cursor.ts';
import { limitError } from '../../domain/page-limit.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import {
  type LogLine,
  type LogLineInput,
  type LogPage,
  type LogStore,
  type LogStream,
  logPageSize,
} from '../../ports/log-store.ts';
import { commitWithoutFsync, type SqliteDatabase } from './database.ts';

interface LineRow {
  readonly seq: number;
  readonly at: string;
  readonly stream: LogStream;
  readonly text: string;
}

/**
 * LogStore over the local-mode SQLite file: one row per line, numbered per
 * run from 1. The cursor is the last sequence number read, encoded so clients
 * treat it as opaque (the CloudWatch reader's cursor is a token).
 *
 * @example
 * const logs = new SqliteLogStore({ db });
 * await logs.append(runId, [{ stream: 'stdout', text: 'PLAY [all]' }]);
 * let page = await logs.read(runId);
 * page = await logs.read(runId, { cursor: page.nextCursor }); // only what arrived since
 */
export class SqliteLogStore implements LogStore {
  readonly #db: SqliteDatabase;
  readonly #clock: Clock;
  readonly #lastSeq;
  readonly #insert;
  readonly #page;

  constructor(options: { db: SqliteDatabase; clock?: Clock }) {
    this.#db = options.db;
    this.#clock = options.clock ?? systemClock;
    this.#lastSeq = this.#db
      .prepare<[string], number>('SELECT COALESCE(MAX(seq), 0) FROM log_lines WHERE run_id = ?')
      .pluck();
    this.#insert = this.#db.prepare<[string, number, string, string, string]>(
      'INSERT INTO log_lines (run_id, seq, at, stream, text) VALUES (?, ?, ?, ?, ?)',
    );
    this.#page = this.#db.prepare<[string, number, number], LineRow>(
      'SELECT seq, at, stream, text FROM log_lines WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?',
    );
  }

  async append(runId: string, lines: readonly LogLineInput[]): Promise<void> {
    if (lines.length === 0) return;
    const now = this.#clock.now();
    // IMMEDIATE: reading MAX(seq) and inserting after it must not interleave with another writer.
    // No fsync of its own: the next durable commit (at the latest the run's terminal write, which the
    // relay makes after its last append) fsyncs these WAL frames with it, and a power cut that takes
    // them takes the run's later states too — the executor writing them died with the machine.
    commitWithoutFsync(this.#db, () => {
      let seq = this.#lastSeq.get(runId) ?? 0;
      for (const line of lines) {
        seq += 1;
        this.#insert.run(runId, seq, line.at ?? now, line.stream, line.text);
      }
    });
  }

  async read(runId: string, options: { cursor?: string; limit?: number } = {}): Promise<LogPage> {
    const limit = logPageSize(options.limit);
    if (limit === undefined) throw limitError();
    const after = options.cursor === undefined ? 0 : decodeSeqCursor(options.cursor);
    const rows = this.#page.all(runId, after, limit);
    const lines: LogLine[] = rows.map((r) => ({ seq: r.seq, at: r.at, stream: r.stream, text: r.text }));
    return { lines, nextCursor: encodeSeqCursor(lines.at(-1)?.seq ?? after) };
  }
}
