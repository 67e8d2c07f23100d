import { ApiError, ConnectionError, HttpClient } from './api-client.ts';
import { parseInvocation, UsageError } from './args.ts';
import { execute } from './commands.ts';
import { EXIT, exitCodeForStatus } from './exit-codes.ts';
import { DEFAULT_URL, HELP } from './help.ts';
import type { Io } from './io.ts';
import { describeProblem } from './output.ts';

const DEFAULT_INTERVAL_MS = 1000;

/**
 * The whole CLI as a function of argv and its surroundings; returns the exit
 * code. bin/remote-worker.ts calls it with the real process.
 *
 * @example
 * process.exitCode = await runCli(['runs', 'get', id, '--json'], nodeIo());
 */
export async function runCli(argv: readonly string[], io: Io): Promise<number> {
  try {
    const invocation = parseInvocation(argv);
    if (invocation.command === 'help') {
      io.stdout.write(HELP);
      return EXIT.ok;
    }
    const { options } = invocation;
    const url = options.url ?? io.env.REMOTE_WORKER_URL ?? DEFAULT_URL;
    const interval = Number(io.env.REMOTE_WORKER_POLL_MS);
    return await execute(invocation.command, invocation.args, options, {
      client: new HttpClient(url, io.env.REMOTE_WORKER_TOKEN),
      io,
      json: options.json === true,
      intervalMs: Number.isFinite(interval) && interval > 0 ? interval : DEFAULT_INTERVAL_MS,
    });
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`remote-worker: ${error.message}\nRun remote-worker --help for usage.\n`);
      return EXIT.usage;
    }
    if (error instanceof ApiError) {
      io.stderr.write(describeProblem(error.status, error.problem));
      return exitCodeForStatus(error.status);
    }
    if (error instanceof ConnectionError) {
      io.stderr.write(
        `error: ${error.message}\n  Is local mode running (npm start)? Set REMOTE_WORKER_URL to point elsewhere.\n`,
      );
      return EXIT.unavailable;
    }
    throw error;
  }
}
