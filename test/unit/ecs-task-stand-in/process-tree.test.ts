import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { descendants, killTree } from '../../../tools/ecs-task-stand-in/process-tree.ts';

const WAIT = { timeout: 3000, interval: 10 } as const;

/** Running, not a zombie waiting for a parent (pid 1 in a container may never reap it). */
const alive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
};

describe('descendants and killTree', () => {
  it('finds every process below a pid, grandchildren in their own group included, and kills them all', async () => {
    // sh → sh (a new session: its own group, as the shim gives the tool) → sleep
    const root = spawn('/bin/sh', ['-c', 'setsid /bin/sh -c "sleep 30 & wait" & sleep 30 & wait'], {
      stdio: 'ignore',
    });
    const pid = root.pid ?? 0;
    await vi.waitFor(() => expect(descendants(pid).length >= 3).toBe(true), WAIT);
    const below = descendants(pid);
    const exited = new Promise((resolve) => root.once('exit', resolve));

    killTree(pid);
    await exited;

    await vi.waitFor(() => expect(below.every((p) => !alive(p))).toBe(true), WAIT);
  });

  it('answers nothing for a pid without children, and killing a gone pid is harmless', () => {
    expect(descendants(2 ** 22 + 1)).toEqual([]);
    expect(() => killTree(2 ** 22 + 1)).not.toThrow();
  });
});
