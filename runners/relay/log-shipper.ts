import type { LogLineInput, LogStore } from '../../shared/ports/log-store.ts';

/** Lines that explain why a play failed, in the order Ansible prints them. */
const PROBLEM_LINE = /^(fatal:|ERROR!|FAILED!|failed:|\[ERROR\]|error:|Error:)/;

/**
 * Buffers task output and appends it to the LogStore in batches, one write at
 * a time and in order. Keeps the last line that explains a failure so the
 * run's reason can quote it.
 *
 * @example
 * const shipper = new LogShipper(logs, runId);
 * executor.start(req, (lines) => shipper.push(lines));
 * await shipper.close();
 */
export class LogShipper {
  private buffer: LogLineInput[] = [];
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private failure: unknown;
  lastProblem: string | undefined;

  constructor(
    private readonly store: LogStore,
    private readonly runId: string,
    private readonly flushMs = 200,
    private readonly maxBatch = 200,
  ) {}

  push(lines: readonly LogLineInput[]): void {
    const now = new Date().toISOString();
    for (const line of lines) {
      const text = line.text.trimStart();
      if (line.stream !== 'system' && PROBLEM_LINE.test(text)) this.lastProblem = text.slice(0, 500);
      // Stamp lines when they arrive, not when the batch is written.
      this.buffer.push(line.at === undefined ? { ...line, at: now } : line);
    }
    if (this.buffer.length >= this.maxBatch) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.flushMs);
  }

  system(text: string): void {
    this.push([{ stream: 'system', text }]);
  }

  /** Start writing what is buffered; the returned promise resolves when every earlier write has landed. */
  flush(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    this.buffer = [];
    if (batch.length > 0) {
      this.chain = this.chain.then(() =>
        this.store.append(this.runId, batch).catch((error: unknown) => {
          this.failure ??= error;
        }),
      );
    }
    return this.chain;
  }

  /** Flush everything; throws the first write error, so a run is never settled with output missing silently. */
  async close(): Promise<void> {
    await this.flush();
    if (this.failure !== undefined) throw this.failure;
  }
}
