/** A task repeating on a timer: `stop()` ends the timer and waits for a run in flight. */
export interface Repeating {
  stop(): Promise<void>;
}

/**
 * Runs `task` every `everyMs`, skipping a tick while the previous run is
 * still going (a slow sweep never piles up behind itself). A failure goes to
 * `onError` and the next tick runs as usual. The timer does not keep the
 * process alive.
 *
 * @example
 * const polling = repeatWithoutOverlap(() => poller.sweep(), 5_000, (e) => logger.error('poll failed', { error: e }));
 * await polling.stop(); // on shutdown: no new sweep, the current one finished
 */
export function repeatWithoutOverlap(
  task: () => Promise<unknown>,
  everyMs: number,
  onError: (error: unknown) => void,
): Repeating {
  let running: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    running ??= task()
      .catch(onError)
      .finally(() => {
        running = undefined;
      });
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
