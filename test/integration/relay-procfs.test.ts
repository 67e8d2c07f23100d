import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  markedProcesses,
  processGroupMembers,
  readStat,
  signalGroup,
  taskAlive,
} from '../../shared/adapters/relay/procfs.ts';

const WAIT = { timeout: 3000, interval: 10 } as const;

/** Real processes read through the real /proc: a shell leading its own group, with a child of its own. */
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
});

function startMarked(executorId: string, runId: string): ChildProcess {
  const child = spawn('/bin/sh', ['-c', 'sleep 30 & wait'], {
    detached: true,
    stdio: 'ignore',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', RW_EXECUTOR: executorId, RW_RUN_ID: runId },
  });
  children.push(child);
  return child;
}

describe('readStat and taskAlive', () => {
  it('reads the group and start time, and tells a recycled pid by its start time', async () => {
    const child = startMarked(`exec-${randomUUID()}`, 'run-1');
    const pid = child.pid ?? 0;
    await vi.waitFor(() => expect(readStat(pid) !== undefined).toBe(true), WAIT);
    const stat = readStat(pid);

    expect(stat?.pgid).toBe(pid);
    expect(taskAlive(pid, stat?.starttime ?? '')).toBe(true);
    expect(taskAlive(pid, '1')).toBe(false);
  });

  it('answers undefined and false for a pid that is gone', async () => {
    const child = startMarked(`exec-${randomUUID()}`, 'run-1');
    const pid = child.pid ?? 0;
    await vi.waitFor(() => expect(readStat(pid) !== undefined).toBe(true), WAIT);
    const starttime = readStat(pid)?.starttime ?? '';
    const exited = new Promise((resolve) => child.once('exit', resolve));

    signalGroup(pid, 'SIGKILL');
    await exited;

    expect(taskAlive(pid, starttime)).toBe(false);
  });
});

describe('markedProcesses and processGroupMembers', () => {
  it("finds this executor's tasks by the marks in their environment, and no one else's", async () => {
    const executorId = `exec-${randomUUID()}`;
    const mine = startMarked(executorId, 'run-mine');
    startMarked(`other-${randomUUID()}`, 'run-other');
    const pid = mine.pid ?? 0;
    // The shell and its sleep both carry the marks; both are in the shell's group.
    await vi.waitFor(() => expect(markedProcesses(executorId).length === 2).toBe(true), WAIT);

    const found = markedProcesses(executorId);

    expect(new Set(found.map((p) => p.runId))).toEqual(new Set(['run-mine']));
    expect(found.every((p) => p.pgid === pid)).toBe(true);
    expect(processGroupMembers(pid).sort()).toEqual(found.map((p) => p.pid).sort());
  });

  it('sees a killed group empty, and signalling it again is harmless', async () => {
    const executorId = `exec-${randomUUID()}`;
    const pid = startMarked(executorId, 'run-1').pid ?? 0;
    await vi.waitFor(() => expect(markedProcesses(executorId).length === 2).toBe(true), WAIT);

    signalGroup(pid, 'SIGKILL');
    await vi.waitFor(() => expect(processGroupMembers(pid).length === 0).toBe(true), WAIT);

    expect(markedProcesses(executorId)).toEqual([]);
    expect(() => signalGroup(pid, 'SIGKILL')).not.toThrow();
  });
});
