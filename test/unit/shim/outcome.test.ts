import { describe, expect, it } from 'vitest';
import { failureOutcome, signalExitCode, toolOutcome } from '../../../runners/shim/outcome.ts';

const endedAt = expect.stringMatching(/^\d{4}-\d\d-\d\dT/);

describe('signalExitCode', () => {
  it('is 128 + the signal number, SIGKILL for an unknown name', () => {
    expect(signalExitCode('SIGTERM')).toBe(143);
    expect(signalExitCode('SIGINT')).toBe(130);
    expect(signalExitCode('SIGNOTHING')).toBe(137);
  });
});

describe('toolOutcome', () => {
  it("answers the tool's own exit code", () => {
    expect(
      toolOutcome({ tool: 'ansible-playbook', code: 2, signal: null, timedOut: false }, 60, undefined),
    ).toEqual({
      exitCode: 2,
      record: { exitCode: 2, signal: null, endedAt },
    });
  });

  it('answers 124 after the timeout, with what the tool said and why', () => {
    expect(
      toolOutcome({ tool: 'kubectl', code: null, signal: 'SIGTERM', timedOut: true }, 60, undefined),
    ).toEqual({
      exitCode: 124,
      record: { exitCode: null, signal: 'SIGTERM', endedAt, reason: 'timed out after 60s' },
    });
  });

  it('answers 128 + n for a signal, naming the one the shim forwarded', () => {
    expect(
      toolOutcome({ tool: 'helm', code: null, signal: 'SIGKILL', timedOut: false }, 60, 'SIGTERM'),
    ).toEqual({
      exitCode: 137,
      record: { exitCode: null, signal: 'SIGKILL', endedAt, reason: 'stopped by SIGTERM' },
    });
    expect(toolOutcome({ tool: 'helm', code: null, signal: null, timedOut: false }, 60, undefined)).toEqual({
      exitCode: 137,
      record: { exitCode: null, signal: 'SIGKILL', endedAt },
    });
  });
});

describe('failureOutcome', () => {
  it("answers the shim's own code, or 128 + n when it was told to stop", () => {
    expect(failureOutcome(125, 'invalid task spec: x', undefined)).toEqual({
      exitCode: 125,
      record: { exitCode: 125, signal: null, endedAt, reason: 'invalid task spec: x' },
    });
    expect(failureOutcome(125, 'stopped before the tool ran', 'SIGTERM').exitCode).toBe(143);
  });
});
