import { isTerminal } from '../../shared/domain/run.ts';
import { type Repeating, repeatWithoutOverlap } from '../../shared/lib/repeat.ts';
import type { Logger } from '../../shared/ports/logger.ts';
import type { RunStore } from '../../shared/ports/run-store.ts';

/** Where a running task learns that its run was cancelled (or ended elsewhere). */
export interface CancelSource {
  /** Call `onCancel` (at most once) when the run asks to be cancelled; the answer stops watching. */
  watch(runId: string, onCancel: () => void): () => void;
}

/**
 * One reader of the cancel flag for all of a relay's running runs: every
 * `everyMs` it reads them in one call (RunStore.getRuns: one BatchGetItem
 * per 100 runs, one SQLite query) instead of one read per run, and tells
 * the watcher of each run that asks to be cancelled or has ended. The timer
 * runs only while something is watched.
 *
 * @example
 * const cancels = new CancelWatch(store, 1000, logger);
 * const unwatch = cancels.watch(run.id, () => execution.kill(10_000));
 */
export class CancelWatch implements CancelSource {
  readonly #watchers = new Map<string, () => void>();
  #timer: Repeating | undefined;

  constructor(
    private readonly store: Pick<RunStore, 'getRuns'>,
    private readonly everyMs: number,
    private readonly logger: Logger,
  ) {}

  watch(runId: string, onCancel: () => void): () => void {
    let called = false;
    const once = () => {
      if (called) return;
      called = true;
      onCancel();
    };
    this.#watchers.set(runId, once);
    this.#timer ??= repeatWithoutOverlap(
      () => this.poll(),
      this.everyMs,
      (error) => this.logger.warn('relay: cancel check failed; trying again', { error: error as Error }),
    );
    return () => {
      if (this.#watchers.get(runId) === once) this.#watchers.delete(runId);
      if (this.#watchers.size === 0) {
        void this.#timer?.stop();
        this.#timer = undefined;
      }
    };
  }

  /** One read for every watched run. */
  async poll(): Promise<void> {
    const ids = [...this.#watchers.keys()];
    if (ids.length === 0) return;
    for (const run of await this.store.getRuns(ids)) {
      if (run.cancelRequested || isTerminal(run.state)) this.#watchers.get(run.id)?.();
    }
  }
}
