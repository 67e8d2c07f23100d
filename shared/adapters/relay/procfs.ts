import { readdirSync, readFileSync } from 'node:fs';

/**
 * What the process executor reads from Linux's /proc about the tasks it
 * started: their state, process group and start time (so a recycled pid is
 * never mistaken for a task), and the marks in their environment
 * (`RW_EXECUTOR`, `RW_RUN_ID`), which the kernel keeps from the moment of
 * exec, so orphans are found even when the relay died before recording them.
 *
 * @example
 * const alive = taskAlive(pid, starttime);
 * const mine = markedProcesses('relay-1'); // [{ pid, pgid, runId }]
 */

interface ProcStat {
  readonly state: string;
  readonly pgid: number;
  readonly starttime: string;
}

/** `/proc/<pid>/stat`; the command name may hold spaces and parentheses, so fields are counted after the last `)`. */
export function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); field 5 is the process group, field 22 the start time.
  const state = fields[0];
  const pgid = Number(fields[2]);
  const starttime = fields[19];
  if (state === undefined || starttime === undefined || !Number.isInteger(pgid)) return undefined;
  return { state, pgid, starttime };
}

const isRunningState = (state: string): boolean => state !== 'Z' && state !== 'X' && state !== 'x';

/** Whether the process of a `process:<pid>:<start time>` handle still runs (a recycled pid has another start time). */
export function taskAlive(pid: number, starttime: string): boolean {
  const stat = readStat(pid);
  return stat !== undefined && stat.starttime === starttime && isRunningState(stat.state);
}

function readEnviron(pid: number): Map<string, string> | undefined {
  let raw: string;
  try {
    raw = readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return undefined;
  }
  const env = new Map<string, string>();
  for (const entry of raw.split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  return env;
}

function listPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => pid !== process.pid);
}

export interface MarkedProcess {
  readonly pid: number;
  readonly pgid: number;
  readonly runId: string;
}

/** Live processes carrying this executor's marker (the shim and everything it started). */
export function markedProcesses(executorId: string): MarkedProcess[] {
  const found: MarkedProcess[] = [];
  for (const pid of listPids()) {
    const stat = readStat(pid);
    if (stat === undefined || !isRunningState(stat.state)) continue;
    const env = readEnviron(pid);
    const runId = env?.get('RW_RUN_ID');
    if (runId !== undefined && env?.get('RW_EXECUTOR') === executorId) {
      found.push({ pid, pgid: stat.pgid, runId });
    }
  }
  return found;
}

/** Live (non-zombie) members of a process group. */
export function processGroupMembers(pgid: number): number[] {
  return listPids().filter((pid) => {
    const stat = readStat(pid);
    return stat !== undefined && stat.pgid === pgid && isRunningState(stat.state);
  });
}

export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

export function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // ESRCH: already gone.
  }
}
