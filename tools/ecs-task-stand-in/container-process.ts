import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';

/** How a container's process ended: its exit code as Docker reports it (128 + n after signal n), or why it never ran. */
export type ContainerEnd = { readonly exitCode: number } | { readonly error: Error };

/**
 * Run a container's entrypoint and command as a local process, in a working
 * directory of its own (removed when it ends), with exactly `env`; both
 * output streams go to `write` as they come.
 *
 * @example
 * const { child, ended } = startContainerProcess(['node', 'shim.mjs'], env, (chunk) => out.write(chunk));
 * const end = await ended; // { exitCode: 0 }
 */
export function startContainerProcess(
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
  write: (chunk: Buffer) => void,
): { readonly child: ChildProcess; readonly ended: Promise<ContainerEnd> } {
  const workDir = mkdtempSync(join(tmpdir(), 'rw-ecs-task-'));
  const [file = '', ...args] = argv;
  const child = spawn(file, args, { cwd: workDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>(
    (resolve) => {
      child.once('error', (error) => resolve({ code: null, signal: null, error }));
      child.once('close', (code, signal) => resolve({ code, signal }));
    },
  );
  for (const stream of [child.stdout, child.stderr]) stream?.on('data', write);
  const ended = closed.then(({ code, signal, error }): ContainerEnd => {
    rmSync(workDir, { recursive: true, force: true });
    if (error !== undefined) return { error };
    return { exitCode: code ?? 128 + (signal === null ? 9 : (constants.signals[signal] ?? 9)) };
  });
  return { child, ended };
}
