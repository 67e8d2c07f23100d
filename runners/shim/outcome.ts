import { constants } from 'node:os';
import type { ExitRecord } from '../../shared/domain/shim-protocol.ts';
import { SHIM_EXIT } from '../../shared/domain/shim-protocol.ts';
import type { ToolResult } from './run-tool.ts';

/** The shim's exit code and the exit record it leaves for its supervisor. */
export interface Outcome {
  readonly exitCode: number;
  readonly record: ExitRecord;
}

/** 128 + the signal's number, as a shell reports death by signal (SIGKILL's 9 for an unknown name). */
export function signalExitCode(signal: string): number {
  const n = (constants.signals as Record<string, number | undefined>)[signal];
  return 128 + (n ?? 9);
}

/**
 * How a tool that ran ended: 124 after the spec's timeout, the tool's own
 * code, or 128 + n for the signal that ended it (`received`, the signal the
 * shim forwarded, names the reason).
 *
 * @example
 * toolOutcome({ tool: 'kubectl', code: null, signal: 'SIGTERM', timedOut: false }, 60, 'SIGTERM');
 * // { exitCode: 143, record: { exitCode: null, signal: 'SIGTERM', endedAt, reason: 'stopped by SIGTERM' } }
 */
export function toolOutcome(
  result: ToolResult,
  timeoutSeconds: number,
  received: NodeJS.Signals | undefined,
): Outcome {
  const endedAt = new Date().toISOString();
  if (result.timedOut) {
    return {
      exitCode: SHIM_EXIT.timedOut,
      record: {
        exitCode: result.code,
        signal: result.signal,
        endedAt,
        reason: `timed out after ${timeoutSeconds}s`,
      },
    };
  }
  if (result.code !== null) {
    return { exitCode: result.code, record: { exitCode: result.code, signal: null, endedAt } };
  }
  const sig = result.signal ?? received ?? 'SIGKILL';
  return {
    exitCode: signalExitCode(sig),
    record: {
      exitCode: null,
      signal: sig,
      endedAt,
      ...(received !== undefined ? { reason: `stopped by ${received}` } : {}),
    },
  };
}

/** The shim failed before the tool could finish: its own code, or 128 + n when it was told to stop. */
export function failureOutcome(
  exitCode: number,
  reason: string,
  received: NodeJS.Signals | undefined,
): Outcome {
  const code = received === undefined ? exitCode : signalExitCode(received);
  return {
    exitCode: code,
    record: { exitCode: code, signal: null, endedAt: new Date().toISOString(), reason },
  };
}
