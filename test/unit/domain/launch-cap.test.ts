import { describe, expect, it } from 'vitest';
import { isBudgetWaitReason } from '../../../shared/domain/launch-budget.ts';
import {
  admits,
  capWaitReason,
  isCapWaitReason,
  unconfirmedHolders,
} from '../../../shared/domain/launch-cap.ts';
import { amend, newRun, transition } from '../../../shared/domain/run.ts';

describe('admits', () => {
  it('admits a run while a slot is free, and refuses one when the cap is full', () => {
    expect(admits({ holdsOne: false, held: 1 }, 2)).toBe(true);
    expect(admits({ holdsOne: false, held: 2 }, 2)).toBe(false);
  });

  it('admits a run that already holds a slot even when the cap is full (a redelivery takes nothing more)', () => {
    expect(admits({ holdsOne: true, held: 2 }, 2)).toBe(true);
    // A cap lowered below what is held: holders keep theirs, newcomers wait.
    expect(admits({ holdsOne: true, held: 5 }, 2)).toBe(true);
    expect(admits({ holdsOne: false, held: 5 }, 2)).toBe(false);
  });
});

describe('capWaitReason', () => {
  it('names the quota a run waits for, in the budget reason style', () => {
    expect(capWaitReason('gcp')).toBe('waiting: Cloud Run running executions');
    expect(capWaitReason('kubernetes')).toBe('waiting: Kubernetes pods per namespace');
    expect(capWaitReason('local')).toBe('waiting: local running tasks');
  });

  it('is recognised as a waiting reason, not a failure reason', () => {
    for (const b of ['gcp', 'kubernetes', 'local']) {
      expect(isCapWaitReason(capWaitReason(b))).toBe(true);
      expect(isBudgetWaitReason(capWaitReason(b))).toBe(true);
    }
    expect(isCapWaitReason('waiting: ECS launch budget')).toBe(false);
    expect(isCapWaitReason('The task exited with code 1')).toBe(false);
    expect(isCapWaitReason(undefined)).toBe(false);
  });

  it('is dropped by the run’s next state, like a budget wait', () => {
    const at = '2026-01-01T00:00:00.000Z';
    const run = newRun(
      { id: 'r1', kind: 'vm', targetId: 'vm-1', asset: 'a.yml', requestedBy: 'alice', timeoutSeconds: 600 },
      at,
    );
    const dispatching = transition(run, 'dispatching', at);
    const waiting = { ...amend(dispatching, at, {}), reason: capWaitReason('gcp') };
    expect(transition(waiting, 'launched', at).reason).toBeUndefined();
  });
});

describe('unconfirmedHolders', () => {
  it('lists the holders not known to be active, for the reconciler to confirm', () => {
    expect(unconfirmedHolders(['r1', 'r2', 'r3'], new Set(['r2']))).toEqual(['r1', 'r3']);
    expect(unconfirmedHolders([], new Set(['r2']))).toEqual([]);
  });
});
