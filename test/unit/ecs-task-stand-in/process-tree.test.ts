import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { descendants, killTree } from '../../../tools/ecs-task-stand-in/process-tree.ts';

/** Running, not a zombie waiting for a parent (pid 1 in a container may never reap it). */
const alive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
};

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !check(); i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(check()).toBe(true);
}

describe('descendants and killTree', () => {
  it('finds every process below a pid, grandchildren in their own group included, and kills them all', async () => {
    // sh → sh (a new session: its own group, as the shim gives the tool) → sleep
    const root = spawn('/bin/sh', ['-c', 'setsid /bin/sh -c "sleep 30 & wait" & sleep 30 & wait'], {
      stdio: 'ignore',
    });
    const pid = root.pid ?? 0;
    await until(() => descendants(pid).length >= 3);
    const below = descendants(pid);
    const exited = new Promise((resolve) => root.once('exit', resolve));

    killTree(pid);
    await exited;

    await until(() => below.every((p) => !alive(p)));
  });

  it('answers nothing for a pid without children, and killing a gone pid is harmless', () => {
    expect(descendants(2 ** 22 + 1)).toEqual([]);
    expect(() => killTree(2 ** 22 + 1)).not.toThrow();
  });
});
