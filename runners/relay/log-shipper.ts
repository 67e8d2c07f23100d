import type { RunKind } from '../../shared/domain/run.ts';
import { TroubleDetector } from '../../shared/domain/troubleshooting.ts';
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
  private waiters: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  private pending: Promise<void> | undefined;
  lastProblem: string | undefined;
  /** The first cause the seeds' troubleshooting names, seen in the task's output (set by {@link watchFor}). */
  private detector: TroubleDetector | undefined;

  constructor(
    private readonly store: LogStore,
    private readonly runId: string,
    private readonly flushMs = 200,
    private readonly maxBatch = 200,
  ) {}

  /** Buffer lines; the promise resolves once they are stored (rejects if that write failed). */
  push(lines: readonly LogLineInput[]): Promise<void> {
    const now = new Date().toISOString();
    for (const line of lines) {
      const text = line.text.trimStart();
      if (line.stream !== 'system' && PROBLEM_LINE.test(text)) this.lastProblem = text.slice(0, 500);
      // The shim's own lines (system) carry causes too: its preflight says when pywinrm is missing.
      this.detector?.feed(text);
      // Stamp lines when they arrive, not when the batch is written.
      this.buffer.push(line.at === undefined ? { ...line, at: now } : line);
    }
    if (this.pending === undefined) {
      this.pending = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
      // A caller that ignores the promise (close() reports the failure) must not cause an unhandled rejection.
      this.pending.catch(() => {});
    }
    const stored = this.pending;
    if (this.buffer.length >= this.maxBatch) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.flushMs);
    return stored;
  }

  /** Look for the seeds' troubleshooting causes in the output of a run of this kind. */
  watchFor(kind: RunKind): this {
    this.detector = new TroubleDetector(kind);
    return this;
  }

  get trouble() {
    return this.detector?.found;
  }

  system(text: string): void {
    this.push([{ stream: 'system', text }]).catch(() => {});
  }

  /** Start writing what is buffered; the returned promise resolves when every earlier write has landed. */
  flush(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    const waiters = this.waiters;
    this.buffer = [];
    this.waiters = [];
    this.pending = undefined;
    if (batch.length > 0) {
      this.chain = this.chain.then(() =>
        this.store.append(this.runId, batch).then(
          () => {
            for (const w of waiters) w.resolve();
          },
          (error: unknown) => {
            this.failure ??= error;
            for (const w of waiters) w.reject(error);
          },
        ),
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
