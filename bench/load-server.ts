/**
 * Local mode with a no-op executor, as its own process, for the load bench
 * (bench/reliability.ts load): the clients and the server then do not share
 * a CPU thread, and the RSS the bench samples is the server's alone. Prints
 * `listening on <url>` on stderr once it serves. Not for operators.
 */
import { startLocalMode } from '../bin/local-mode/local-mode.ts';
import { noopExecutor } from './support/noop-executor.ts';

const local = await startLocalMode({ executor: noopExecutor() });
process.stderr.write(`listening on ${local.url}\n`);
process.on('SIGTERM', () => {
  local.close({ drainMs: 1000 }).then(() => process.exit(0));
});
