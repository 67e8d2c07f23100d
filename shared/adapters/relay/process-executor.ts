import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LaunchRejectedError } from '../../domain/errors.ts';
import { EXIT_FILE, parseExitRecord } from '../../domain/shim-protocol.ts';
import { sleep } from '../../lib/sleep.ts';
import type {
  ExecutionRequest,
  ExecutionResult,
  Executor,
  LineSink,
  RunningExecution,
} from '../../ports/executor.ts';
import { OUTPUT_LOG, OutputTail, readFileSyncOr } from './output-tail.ts';
import {
  type MarkedProcess,
  markedProcesses,
  processGroupMembers,
  readStat,
  signalGroup,
  signalPid,
  taskAlive,
} from './procfs.ts';

/** Relay environment a task may see. Everything else (cloud credentials, the API token) stays in the relay. */
export const DEFAULT_INHERIT_ENV = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'SSH_AUTH_SOCK',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
] as const;

const TASK_FILE = 'task.json';
/**
 * The shim's handle, written once its spawn has returned (libuv answers a
 * spawn only after the child's exec). The task file is written before the
 * spawn, so a relay killed between the two leaves a task file and no task:
 * without this record `resume` could not tell that from a task that ran and
 * died without an exit record.
 */
const HANDLE_FILE = 'task.handle';
/** How long kill waits for a SIGKILLed group to disappear before giving up. */
const KILL_WAIT_MS = 5000;

export interface ProcessExecutorOptions {
  /**
   * Marks every process this executor starts (`RW_EXECUTOR` in its
   * environment) so `reapOrphans` never touches tasks of another relay on the
   * same host. Must stay the same across restarts of one relay. Default `relay`.
   */
  readonly executorId?: string;
  /** A bundled shim run with plain `node`. Default: runners/shim/main.ts through tsx. */
  readonly shimPath?: string;
  /** Relay environment variables passed to tasks, in addition to every `ANSIBLE_*`. */
  readonly inheritEnv?: readonly string[];
  /** How often output and liveness are polled. Default 200 ms. */
  readonly pollMs?: number;
  /** Grace between SIGTERM and SIGKILL when reaping orphans. Default 5000 ms. */
  readonly reapGraceMs?: number;
}

async function waitUntil(check: () => boolean, timeoutMs: number, pollMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(Math.min(pollMs, Math.max(1, deadline - Date.now())));
  }
}

/** What the shim recorded in exit.json, as an ExecutionResult; undefined when there is no (readable) record. */
function readExitRecord(workDir: string): ExecutionResult | undefined {
  const text = readFileSyncOr(join(workDir, EXIT_FILE), '');
  return text === '' ? undefined : parseExitRecord(text);
}

interface Supervised {
  readonly pid: number;
  readonly starttime: string;
  readonly workDir: string;
  readonly runId: string | undefined;
  readonly tail: OutputTail;
  /** Present when this relay is the parent: its exit event is the fastest signal. */
  readonly child?: ChildProcess;
}

/**
 * Runs each task as a detached child process group of the relay: the task
 * shim, which runs ansible-playbook / kubectl / helm from the host's PATH.
 *
 * Output goes to `<workDir>/output.log` through a file descriptor, not a pipe,
 * so a task outlives a relay crash; the relay tails the file. The handle
 * (`process:<pid>:<start time>`) carries the kernel's start time of the
 * process so a recycled pid is never mistaken for the task. Every task carries
 * `RW_EXECUTOR` and `RW_RUN_ID` in its environment, which the kernel keeps in
 * `/proc/<pid>/environ` from the moment of exec: orphans are found even when the
 * relay died before recording anything.
 *
 * Output is shipped at least once: the offset is saved right after the sink
 * returns, so only a crash between those two steps ships a batch twice.
 *
 * @example
 * const executor = new ProcessExecutor({ executorId: 'relay-1' });
 * const exec = await executor.start(
 *   { runId, image: '', spec, secretEnv: { RW_SECRET_0: 'hunter2' }, workDir },
 *   (lines) => void logs.append(runId, lines),
 * );
 * const { exitCode } = await exec.done;
 */
export class ProcessExecutor implements Executor {
  readonly name = 'process' as const;
  private readonly executorId: string;
  private readonly pollMs: number;
  private readonly reapGraceMs: number;
  private readonly inheritEnv: readonly string[];
  private readonly command: readonly string[];

  constructor(options: ProcessExecutorOptions = {}) {
    this.executorId = options.executorId ?? 'relay';
    this.pollMs = options.pollMs ?? 200;
    this.reapGraceMs = options.reapGraceMs ?? 5000;
    this.inheritEnv = options.inheritEnv ?? DEFAULT_INHERIT_ENV;
    this.command =
      options.shimPath !== undefined
        ? [process.execPath, options.shimPath]
        : [
            process.execPath,
            '--import',
            import.meta.resolve('tsx'),
            fileURLToPath(new URL('../../../runners/shim/main.ts', import.meta.url)),
          ];
  }

  async start(request: ExecutionRequest, sink: LineSink): Promise<RunningExecution> {
    const { workDir } = request;
    const taskFile = join(workDir, TASK_FILE);
    rmSync(taskFile, { force: true });
    // A result or handle left by an earlier attempt in the same dir must not be read as this one's.
    rmSync(join(workDir, EXIT_FILE), { force: true });
    rmSync(join(workDir, HANDLE_FILE), { force: true });
    writeFileSync(taskFile, JSON.stringify(request.spec), { mode: 0o600, flag: 'wx' });

    const env: NodeJS.ProcessEnv = {};
    for (const [name, value] of Object.entries(process.env)) {
      if (value !== undefined && (this.inheritEnv.includes(name) || name.startsWith('ANSIBLE_'))) {
        env[name] = value;
      }
    }
    Object.assign(env, request.env, request.secretEnv, {
      RW_TASK_FILE: taskFile,
      RW_RESULT_DIR: workDir,
      RW_TMP_DIR: workDir,
      RW_RUN_ID: request.runId,
      RW_EXECUTOR: this.executorId,
    });

    const out = openSync(join(workDir, OUTPUT_LOG), 'a', 0o600);
    let child: ChildProcess;
    try {
      const [file, ...args] = this.command;
      child = spawn(file ?? process.execPath, args, {
        cwd: workDir,
        env,
        detached: true,
        stdio: ['ignore', out, out],
      });
    } finally {
      closeSync(out);
    }
    const pid = child.pid;
    const stat = pid === undefined ? undefined : readStat(pid);
    if (pid === undefined || stat === undefined) {
      throw new LaunchRejectedError(`Could not start the task shim for run ${request.runId}`);
    }
    writeFileSync(join(workDir, HANDLE_FILE), `process:${pid}:${stat.starttime}`, { mode: 0o600 });
    // The relay may exit (restart) while tasks run; they are adopted afterwards.
    child.unref();
    const tail = new OutputTail(workDir, sink);
    return this.supervise({ pid, starttime: stat.starttime, workDir, runId: request.runId, tail, child });
  }

  async adopt(handle: string, workDir: string, sink: LineSink): Promise<RunningExecution> {
    const match = /^process:(\d+):(\d+)$/.exec(handle);
    if (match === null) throw new LaunchRejectedError(`Not a process executor handle: ${handle}`);
    const pid = Number(match[1]);
    const starttime = match[2] ?? '';
    const spec = readFileSyncOr(join(workDir, TASK_FILE), '');
    let runId: string | undefined;
    try {
      runId = (JSON.parse(spec) as { runId?: string }).runId;
    } catch {
      runId = undefined;
    }
    return this.supervise({ pid, starttime, workDir, runId, tail: new OutputTail(workDir, sink) });
  }

  async resume(runId: string, workDir: string, sink: LineSink): Promise<RunningExecution | undefined> {
    if (!existsSync(join(workDir, TASK_FILE))) return undefined;
    // The shim leads its own process group (detached); its children carry the same marks.
    const leader = markedProcesses(this.executorId).find((p) => p.runId === runId && p.pid === p.pgid);
    const stat = leader === undefined ? undefined : readStat(leader.pid);
    if (leader !== undefined && stat !== undefined) {
      return this.adopt(`process:${leader.pid}:${stat.starttime}`, workDir, sink);
    }
    // No live shim, no exit record and no handle: the relay died after writing the task file and
    // before the spawn returned, so nothing ran and a start is the task's first.
    if (!existsSync(join(workDir, EXIT_FILE)) && !existsSync(join(workDir, HANDLE_FILE))) return undefined;
    // The shim ran: a handle no process matches makes `supervise` answer its exit record (or `lost`).
    return this.adopt('process:0:0', workDir, sink);
  }

  async reapOrphans(keep: ReadonlySet<string>): Promise<readonly string[]> {
    const orphans = markedProcesses(this.executorId).filter((p) => !keep.has(p.runId));
    const runIds = [...new Set(orphans.map((p) => p.runId))];
    if (runIds.length === 0) return [];
    const pgids = new Set(orphans.map((p) => p.pgid));
    for (const pgid of pgids) signalGroup(pgid, 'SIGTERM');
    const stillThere = (): MarkedProcess[] =>
      markedProcesses(this.executorId).filter((p) => runIds.includes(p.runId));
    const gone = await waitUntil(() => stillThere().length === 0, this.reapGraceMs, this.pollMs);
    if (!gone) {
      for (const p of stillThere()) {
        signalGroup(p.pgid, 'SIGKILL');
        signalPid(p.pid, 'SIGKILL');
      }
    }
    return runIds;
  }

  private isOurs(pid: number, starttime: string): boolean {
    return taskAlive(pid, starttime);
  }

  private supervise(task: Supervised): RunningExecution {
    const { pid, starttime, workDir, tail, child } = task;
    const handle = `process:${pid}:${starttime}`;
    let killedWith: NodeJS.Signals | undefined;

    const finish = async (status?: {
      code: number | null;
      signal: NodeJS.Signals | null;
    }): Promise<ExecutionResult> => {
      tail.stop();
      tail.drain(true);
      // The task is over only once its output is stored and the offset says so.
      await tail.settled();
      const recorded = readExitRecord(workDir);
      if (recorded !== undefined) return recorded;
      if (status?.signal != null) return { signal: status.signal };
      if (status?.code != null) return { exitCode: status.code };
      if (killedWith !== undefined) return { signal: killedWith };
      return { lost: `The task (pid ${pid}) is gone and left no exit record in ${workDir}` };
    };

    let done: Promise<ExecutionResult>;
    if (child !== undefined) {
      tail.start(this.pollMs);
      done = new Promise((resolve) => {
        child.once('exit', (code, signal) => resolve(finish({ code, signal })));
      });
    } else if (this.isOurs(pid, starttime)) {
      tail.start(this.pollMs);
      done = (async () => {
        while (this.isOurs(pid, starttime)) await sleep(this.pollMs);
        return finish();
      })();
    } else {
      done = finish();
    }

    const kill = async (graceMs: number): Promise<void> => {
      if (!this.isOurs(pid, starttime)) {
        await done;
        return;
      }
      // Only the pgid of the process we started: the start time check above rules out a recycled pid.
      const alive = (): boolean => this.taskProcesses(pid, task.runId).length > 0;
      killedWith = 'SIGTERM';
      this.signalTask(pid, task.runId, 'SIGTERM');
      if (!(await waitUntil(() => !alive(), graceMs, Math.min(this.pollMs, 50)))) {
        killedWith = 'SIGKILL';
        this.signalTask(pid, task.runId, 'SIGKILL');
        await waitUntil(() => !alive(), KILL_WAIT_MS, 20);
      }
      await done;
      // A SIGKILLed shim cannot remove its private dir (it may hold secrets files): do it for it.
      for (const name of readdirSafe(workDir)) {
        if (name.startsWith('rw-task-')) rmSync(join(workDir, name), { recursive: true, force: true });
      }
    };

    return { handle, done, kill };
  }

  /** The task's group plus anything marked with its run id that left the group (the tool's own group). */
  private taskProcesses(pgid: number, runId: string | undefined): number[] {
    const members = new Set(processGroupMembers(pgid));
    if (runId !== undefined) {
      for (const p of markedProcesses(this.executorId)) if (p.runId === runId) members.add(p.pid);
    }
    return [...members];
  }

  private signalTask(pgid: number, runId: string | undefined, signal: NodeJS.Signals): void {
    signalGroup(pgid, signal);
    if (runId === undefined) return;
    for (const p of markedProcesses(this.executorId)) {
      if (p.runId === runId && p.pgid !== pgid) signalGroup(p.pgid, signal);
    }
  }
}

function readdirSafe(dir: string): string[] {
  try {
    return existsSync(dir) ? readdirSync(dir) : [];
  } catch {
    return [];
  }
}
