import { nodeIo } from './cli/io.ts';
import { runCli } from './cli/main.ts';

/** `remote-worker …` (`npx remote-worker`): see bin/cli/help.ts or `remote-worker --help`. */
process.exitCode = await runCli(process.argv.slice(2), nodeIo());
