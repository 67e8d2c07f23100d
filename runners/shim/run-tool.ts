import type { ChildProcess } from 'node:child_process';
import type { CompiledRedaction } from '../../shared/domain/redaction.ts';
import { SHIM_EXIT } from '../../shared/domain/shim-protocol.ts';
import type { TaskSpec } from '../../shared/domain/task-spec.ts';
import { containerTargetOf } from './env.ts';
import { ShimError } from './errors.ts';
import { commandLine, prepareInvocation } from './invocation.ts';
import { pipeLines } from './lines.ts';
import { signalGroup, startTool } from './tool-process.ts';

/** After the tool exits, how long inherited pipes may stay open (a straggling worker) before we stop reading. */
const CLOSE_WAIT_MS = 2000;

export interface ToolResult {
  readonly tool: string;
  readonly code: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
}

export interface ToolHooks {
  readonly say: (message: string) => void;
  readonly write: (text: string) => void;
  /** Aborted when the shim is told to stop before the tool runs (e.g. during a download). */
  readonly signal: AbortSignal;
  readonly stop: (signal: NodeJS.Signals) => void;
  /** `stopper` replaces signalling the child (container mode: `docker stop` / `docker rm -f`). */
  readonly started: (child: ChildProcess, stopper?: (signal: NodeJS.Signals) => void) => void;
}

/**
 * Run the task's tool once, in `workDir` (the shim's private dir): prepare
 * its files and command, start it, pipe both streams through their own
 * redactor to `write`, stop it at the spec's timeout, and wait until it and
 * its pipes are done. Resolves with how it ended; a tool that cannot be
 * started rejects with a ShimError (exit 127). `sshDir`: where ssh keeps its
 * control sockets on this host (sshControlDir), by default the private dir's `cp`.
 *
 * @example
 * const result = await runTool(spec, workDir, process.env, compiled, { say, write, signal, stop, started });
 */
export async function runTool(
  spec: TaskSpec,
  workDir: string,
  env: NodeJS.ProcessEnv,
  redaction: CompiledRedaction,
  { say, write, signal, stop, started }: ToolHooks,
  sshDir?: string,
): Promise<ToolResult> {
  const container = containerTargetOf(env);
  const invocation = await prepareInvocation(spec, workDir, env, container, signal, sshDir);
  const { command } = invocation;

  // Built before the tool starts: a redactor that cannot be made must not leave a tool running unread.
  const stdoutRedactor = redaction.redactor();
  const stderrRedactor = redaction.redactor();
  say(`running ${commandLine(command.tool, command.args)}`);
  const { child, stopper, removeContainer } = startTool(spec, workDir, env, container, invocation, say);
  const emit = (line: string): void => write(`${line}\n`);
  const out = pipeLines(child.stdout, stdoutRedactor, emit);
  const err = pipeLines(child.stderr, stderrRedactor, emit);

  let timedOut = false;
  const timer =
    spec.timeoutSeconds > 0
      ? setTimeout(() => {
          timedOut = true;
          say(`timed out after ${spec.timeoutSeconds}s; stopping ${command.tool}`);
          stop('SIGTERM');
        }, spec.timeoutSeconds * 1000)
      : undefined;

  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, sig) => resolve({ code, signal: sig }));
  });
  if (child.pid !== undefined) started(child, stopper);
  let status: { code: number | null; signal: string | null };
  try {
    status = await exited;
  } catch (error) {
    out.finish();
    err.finish();
    if (timer !== undefined) clearTimeout(timer);
    const code = (error as NodeJS.ErrnoException).code;
    const what = container === undefined ? command.tool : `the container CLI ${container.bin}`;
    throw new ShimError(
      `cannot run ${what}: ${code === 'ENOENT' ? 'not found on PATH' : (error as Error).message}`,
      SHIM_EXIT.notFound,
    );
  }
  if (timer !== undefined) clearTimeout(timer);
  if (child.pid !== undefined && (status.signal !== null || timedOut)) {
    // Stragglers of a stopped tool would keep its pipes (and the pause they sit in) alive.
    signalGroup(child.pid, 'SIGKILL');
  }
  const closed = Promise.all([out.done, err.done]);
  const grace = new Promise<void>((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref());
  await Promise.race([closed, grace]);
  out.finish();
  err.finish();
  child.stdout.destroy();
  child.stderr.destroy();
  // `--rm` removes it on a normal exit; after a stop or a killed CLI it may still be there. None is left behind.
  await removeContainer();
  return { tool: command.tool, code: status.code, signal: status.signal, timedOut };
}
