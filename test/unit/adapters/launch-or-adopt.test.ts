import { describe, expect, it } from 'vitest';
import { launchOrAdopt } from '../../../shared/adapters/launch-or-adopt.ts';
import { LaunchRejectedError } from '../../../shared/domain/errors.ts';
import { newRun, type Run } from '../../../shared/domain/run.ts';
import type { RunAttempt } from '../../../shared/ports/launcher.ts';

const run: Run = {
  ...newRun(
    { id: 'run-1', kind: 'vm', targetId: 't', asset: 'a.yml', requestedBy: 'alice', timeoutSeconds: 60 },
    new Date().toISOString(),
  ),
  attempt: 3,
};

/** Steps that record what was called with which name; `existing` is what adopt finds. */
function recorded(existing: string | undefined, nameFor = (k: RunAttempt) => `rw-${k.runId}-${k.attempt}`) {
  const calls: string[] = [];
  const steps = {
    resource: 'a test resource',
    nameFor,
    adopt: async (name: string) => {
      calls.push(`adopt ${name}`);
      return existing;
    },
    start: async (name: string) => {
      calls.push(`start ${name}`);
      return `started:${name}`;
    },
  };
  return { calls, steps };
}

describe('launchOrAdopt', () => {
  it('starts the attempt under its name when there is nothing to adopt', async () => {
    const { calls, steps } = recorded(undefined);

    const handle = await launchOrAdopt(run, steps);

    expect(handle).toBe('started:rw-run-1-3');
    expect(calls).toEqual(['adopt rw-run-1-3', 'start rw-run-1-3']);
  });

  it('adopts what exists under the name and starts nothing', async () => {
    const { calls, steps } = recorded('adopted:rw-run-1-3');

    const handle = await launchOrAdopt(run, steps);

    expect(handle).toBe('adopted:rw-run-1-3');
    expect(calls).toEqual(['adopt rw-run-1-3']);
  });

  it('refuses for good, before looking or starting, a run id the backend cannot name', async () => {
    const { calls, steps } = recorded(undefined, () => {
      throw new RangeError('too long');
    });

    const launched = launchOrAdopt(run, steps);

    await expect(launched).rejects.toThrow(LaunchRejectedError);
    await expect(launched).rejects.toThrow('Run run-1 cannot be named as a test resource: too long');
    expect(calls).toEqual([]);
  });
});
