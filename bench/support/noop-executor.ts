import type { Executor, RunningExecution } from '../../shared/ports/executor.ts';

/**
 * An executor that starts nothing and ends every task at once with exit 0,
 * so a benchmark (or a test of the API alone) measures the control plane's
 * own cost. `onStart`, when given, is told of each run's start: a map records
 * when it was asked (performance.now()); a function is called with the run id,
 * and a start waits for the promise it returns (to hold starts open).
 */
export function noopExecutor(onStart?: Map<string, number> | ((runId: string) => unknown)): Executor {
  const note = onStart instanceof Map ? (runId: string) => onStart.set(runId, performance.now()) : onStart;
  return {
    name: 'process',
    async start(request): Promise<RunningExecution> {
      const pending = note?.(request.runId);
      if (pending instanceof Promise) await pending;
      return {
        handle: `noop:${request.runId}`,
        done: Promise.resolve({ exitCode: 0 }),
        kill: async () => {},
      };
    },
    async adopt(handle) {
      return { handle, done: Promise.resolve({ exitCode: 0 }), kill: async () => {} };
    },
    reapOrphans: async () => [],
  };
}
