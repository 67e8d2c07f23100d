import type { ChildProcess } from 'node:child_process';
import { signalGroup } from './tool-process.ts';

const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/**
 * How the shim stops its tool: a signal it receives (SIGTERM, SIGINT,
 * SIGHUP) or the spec's timeout forwards SIGTERM to the tool's whole process
 * group (or, in container mode, to the container through the engine), and
 * SIGKILL follows after the grace (`RW_KILL_GRACE_MS`), so the shim can still
 * clean up inside its supervisor's own grace period. A signal that arrives
 * before the tool started aborts {@link ToolStopping.signal} (a download, say)
 * and is forwarded as soon as the tool starts.
 *
 * @example
 * const stopping = new ToolStopping(5000, say).listen();
 * try { await runTool(spec, dir, env, compiled, { say, write, ...stopping.hooks() }); } finally { stopping.dispose(); }
 */
export class ToolStopping {
  /** The first signal the shim received, if any. */
  received: NodeJS.Signals | undefined;
  private readonly abort = new AbortController();
  private child: ChildProcess | undefined;
  /** Set in container mode: signals go to the container through the engine, not to the CLI process. */
  private stopTool: ((signal: NodeJS.Signals) => void) | undefined;
  private killTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly graceMs: number,
    private readonly say: (message: string) => void,
  ) {}

  /** Aborted once the shim is told to stop. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Forward the process's SIGTERM, SIGINT and SIGHUP to the tool from now on. */
  listen(): this {
    for (const s of SIGNALS) process.on(s, this.onSignal);
    return this;
  }

  /** Stop listening and forget the pending SIGKILL. */
  dispose(): void {
    if (this.killTimer !== undefined) clearTimeout(this.killTimer);
    for (const s of SIGNALS) process.off(s, this.onSignal);
  }

  /** The tool runs: signals go to it (or through `stopper`); one received meanwhile is forwarded now. */
  readonly started = (child: ChildProcess, stopper?: (signal: NodeJS.Signals) => void): void => {
    this.child = child;
    this.stopTool = stopper;
    if (this.received !== undefined) this.stop(this.received);
  };

  /** Stop the tool: `signal` now, SIGKILL after the grace. */
  readonly stop = (signal: NodeJS.Signals): void => {
    this.abort.abort();
    this.signalTool(signal);
    if (this.killTimer === undefined && this.child !== undefined) {
      this.killTimer = setTimeout(() => this.signalTool('SIGKILL'), this.graceMs);
    }
  };

  private readonly onSignal = (signal: NodeJS.Signals): void => {
    if (this.received === undefined) {
      this.received = signal;
      this.say(`received ${signal}; stopping`);
    }
    this.stop(signal);
  };

  private signalTool(signal: NodeJS.Signals): void {
    const child = this.child;
    if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    if (this.stopTool !== undefined) {
      this.stopTool(signal);
      return;
    }
    // The tool leads its own process group: Ansible's forked workers outlive a
    // signal sent to the main process alone.
    if (!signalGroup(child.pid, signal)) child.kill(signal);
  }
}
