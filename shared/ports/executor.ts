import type { TaskSpec } from '../domain/task.ts';
import type { LogLineInput } from './log-store.ts';

/**
 * Runs one task on the relay host: as a child process group (`process`) or a
 * sibling container through the docker CLI (`docker`). Both run the task shim.
 *
 * @example
 * const exec = await executor.start(request, (lines) => logs.append(runId, lines));
 * const { exitCode } = await exec.done;
 */
export interface ExecutionRequest {
  readonly runId: string;
  /** Runner image (docker executor only). */
  readonly image: string;
  readonly spec: TaskSpec;
  /** Secret values by environment variable name (`RW_SECRET_0` → value). Never written to disk or argv. */
  readonly secretEnv: Readonly<Record<string, string>>;
  /** Extra non-secret environment for the task (e.g. PORTAINER_URL). */
  readonly env?: Readonly<Record<string, string>>;
  /** Per-run working directory on the relay host, created by the caller. */
  readonly workDir: string;
}

export interface ExecutionResult {
  /** Exit code of the task; undefined when it was killed by a signal or its result is unknown. */
  readonly exitCode?: number;
  readonly signal?: string;
  /** Set when the outcome could not be observed (e.g. adopted after a crash with no exit record). */
  readonly lost?: string;
}

export interface RunningExecution {
  /** Opaque; pass to `adopt` after a restart. */
  readonly handle: string;
  readonly done: Promise<ExecutionResult>;
  /** SIGTERM the whole task (process group / container), SIGKILL after `graceMs`. Resolves when it is gone. */
  kill(graceMs: number): Promise<void>;
}

export type LineSink = (lines: readonly LogLineInput[]) => void | Promise<void>;

export interface Executor {
  readonly name: 'process' | 'docker';
  start(request: ExecutionRequest, sink: LineSink): Promise<RunningExecution>;
  /**
   * Re-attach to a task started by an earlier incarnation of the relay. Output
   * not yet shipped is replayed to `sink` (the executor keeps its shipped offset in `workDir`). When the task is
   * gone, `done` resolves at once with its recorded exit code or `lost`.
   */
  adopt(handle: string, workDir: string, sink: LineSink): Promise<RunningExecution>;
  /**
   * The task an earlier incarnation of the relay started for this run in `workDir` but never got to
   * record (it died between the start and the write): attached while it runs, or answering its recorded
   * exit code when it has ended, or `lost`. Undefined when nothing was started there: start it then.
   * This is what keeps a play from running twice when a crash falls between starting it and saying so.
   */
  resume?(runId: string, workDir: string, sink: LineSink): Promise<RunningExecution | undefined>;
  /** Kill and remove every task this executor started whose run id is not in `keep`. Returns the run ids reaped. */
  reapOrphans(keep: ReadonlySet<string>): Promise<readonly string[]>;
}
