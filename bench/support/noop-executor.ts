import type { Executor, RunningExecution } from '../../shared/ports/executor.ts';

/**
 * An executor that starts nothing and ends every task at once with exit 0,
 * so a benchmark (or a test of the API alone) measures the control plane's
 * own cost; `started`, when given, records when each run's task was asked to
 * start (performance.now()).
 */
export function noopExecutor(started?: Map<string, number>): Executor {
  return {
    name: 'process',
    async start(request): Promise<RunningExecution> {
      started?.set(request.runId, performance.now());
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
