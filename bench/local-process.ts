/**
 * Local mode with a no-op executor in a process of its own, for
 * bench/dispatch-latency.ts: the bench's HTTP client then no more shares the
 * server's thread than it shares the floor's (floor-server.mjs). Prints
 * `listening on <url>`, then `started <runId> <ms>` on stderr as each task
 * starts, `ms` on the shared clock (performance.timeOrigin + now). Not for operators.
 */
import { startLocalMode } from '../bin/local-mode/local-mode.ts';
import { noopExecutor } from './support/noop-executor.ts';

const started = new Map<string, number>();
const executor = noopExecutor(started);
const startTask = executor.start.bind(executor);
executor.start = async (request, onLines) => {
  const execution = await startTask(request, onLines);
  const at = started.get(request.runId) ?? Number.NaN;
  process.stderr.write(`started ${request.runId} ${(performance.timeOrigin + at).toFixed(3)}\n`);
  started.delete(request.runId);
  return execution;
};
const local = await startLocalMode({ executor });
process.stderr.write(`listening on ${local.url}\n`);
process.on('SIGTERM', () => {
  local.close({ drainMs: 1000 }).then(() => process.exit(0));
});
