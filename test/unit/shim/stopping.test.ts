import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolStopping } from '../../../runners/shim/stopping.ts';

/** Real processes leading their own group, as the shim starts the tool. */
const started: ChildProcess[] = [];
const stoppings: ToolStopping[] = [];
afterEach(() => {
  for (const s of stoppings.splice(0)) s.dispose();
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function tool(script: string): { child: ChildProcess; exit: Promise<NodeJS.Signals | null> } {
  const child = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' });
  started.push(child);
  return { child, exit: new Promise((resolve) => child.once('exit', (_code, signal) => resolve(signal))) };
}
const stopping = (graceMs: number, said: string[] = []): ToolStopping => {
  const s = new ToolStopping(graceMs, (m) => said.push(m));
  stoppings.push(s);
  return s;
};

describe('ToolStopping', () => {
  it("stops the tool's group with the signal and aborts what is still being prepared", async () => {
    const s = stopping(5000);
    const { child, exit } = tool('exec sleep 30');
    s.started(child);

    s.stop('SIGTERM');

    expect(await exit).toBe('SIGTERM');
    expect(s.signal.aborted).toBe(true);
  });

  it('sends SIGKILL after the grace to a tool that ignores SIGTERM', async () => {
    const s = stopping(100);
    const { child, exit } = tool('trap "" TERM; while :; do sleep 0.05; done');
    await new Promise((resolve) => setTimeout(resolve, 100));
    s.started(child);

    s.stop('SIGTERM');

    expect(await exit).toBe('SIGKILL');
  });

  it('forwards a signal that arrived before the tool started as soon as it starts', async () => {
    const said: string[] = [];
    const s = stopping(5000, said).listen();

    process.emit('SIGHUP', 'SIGHUP');
    const { child, exit } = tool('exec sleep 30');
    s.started(child);

    expect(await exit).toBe('SIGHUP');
    expect(s.received).toBe('SIGHUP');
    expect(said).toEqual(['received SIGHUP; stopping']);
  });

  it('hands signals to the stopper instead of the process in container mode', () => {
    const s = stopping(5000);
    const { child } = tool('exec sleep 30');
    const asked: NodeJS.Signals[] = [];
    s.started(child, (signal) => asked.push(signal));

    s.stop('SIGTERM');

    expect(asked).toEqual(['SIGTERM']);
    expect(child.signalCode).toBeNull();
  });
});
