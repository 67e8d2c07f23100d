import { closeSync, fstatSync, openSync, readFileSync, readSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { shimLineStream } from '../../domain/shim-protocol.ts';
import type { LineSink } from '../../ports/executor.ts';
import type { LogLineInput } from '../../ports/log-store.ts';

/** The task's output, stdout and stderr together, in its work dir. */
export const OUTPUT_LOG = 'output.log';
const OFFSET_FILE = 'output.offset';
/** One read of the log per tick at most; a huge backlog is shipped over several ticks. */
const READ_CHUNK = 1024 * 1024;
/** A "line" longer than this is shipped in pieces rather than held in memory forever. */
const MAX_PENDING = 1024 * 1024;

/**
 * Ships `output.log` to the sink in whole lines and keeps the shipped byte
 * offset in the work dir, so a relay that adopts the task after a restart
 * resumes where the last one stopped instead of shipping everything again.
 */
export class OutputTail {
  private offset: number;
  private pending = Buffer.alloc(0);
  private timer: NodeJS.Timeout | undefined;
  private saved: Promise<void> = Promise.resolve();

  constructor(
    private readonly workDir: string,
    private readonly sink: LineSink,
  ) {
    const saved = Number(readFileSyncOr(join(workDir, OFFSET_FILE), '0').trim());
    this.offset = Number.isSafeInteger(saved) && saved >= 0 ? saved : 0;
  }

  /** Resolves once every shipped batch's offset has been written (or given up on). */
  settled(): Promise<void> {
    return this.saved;
  }

  start(pollMs: number): void {
    this.timer = setInterval(() => this.drain(false), pollMs);
    this.timer.unref();
  }

  /** Ship what is new; on `final`, also the last line when it has no newline. */
  drain(final: boolean): void {
    let fd: number;
    try {
      fd = openSync(join(this.workDir, OUTPUT_LOG), 'r');
    } catch {
      return;
    }
    try {
      const size = fstatSync(fd).size;
      let position = this.offset + this.pending.length;
      while (position < size) {
        const buffer = Buffer.alloc(Math.min(READ_CHUNK, size - position));
        const read = readSync(fd, buffer, 0, buffer.length, position);
        if (read <= 0) break;
        position += read;
        this.take(buffer.subarray(0, read));
        if (!final) break;
      }
    } finally {
      closeSync(fd);
    }
    if (final && this.pending.length > 0) {
      const last = this.pending;
      this.pending = Buffer.alloc(0);
      this.ship([last], last.length);
    }
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private take(chunk: Buffer): void {
    const data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const lines: Buffer[] = [];
    let start = 0;
    for (let nl = data.indexOf(10); nl >= 0; nl = data.indexOf(10, start)) {
      lines.push(data.subarray(start, nl));
      start = nl + 1;
    }
    while (data.length - start > MAX_PENDING) {
      lines.push(data.subarray(start, start + MAX_PENDING));
      start += MAX_PENDING;
    }
    this.pending = Buffer.from(data.subarray(start));
    if (lines.length > 0) this.ship(lines, start);
  }

  private ship(lines: readonly Buffer[], bytes: number): void {
    const out: LogLineInput[] = lines.map((raw) => {
      const text = raw.toString('utf8').replace(/\r$/, '');
      return { stream: shimLineStream(text), text };
    });
    this.offset += bytes;
    const offset = this.offset;
    const landed = this.sink(out);
    // Record the offset only once the sink says the lines are stored: a crash before that re-ships them.
    this.saved = this.saved
      .then(() => landed)
      .then(
        () => {
          const file = join(this.workDir, OFFSET_FILE);
          writeFileSync(`${file}.tmp`, String(offset));
          renameSync(`${file}.tmp`, file);
        },
        () => {}, // not stored: leave the offset, so the next relay ships them again
      )
      .catch(() => {}); // the work dir may be gone once the run settled
  }
}

export function readFileSyncOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
}
