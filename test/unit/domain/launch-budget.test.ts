import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LauncherUnavailableError } from '../../../shared/domain/errors.ts';
import {
  type Budget,
  budgetWaitReason,
  intervalMs,
  isBudgetWaitReason,
  isThrottling,
  joinLine,
  takeFromBudget,
  tokensAt,
} from '../../../shared/domain/launch-budget.ts';
import { amend, newRun, transition } from '../../../shared/domain/run.ts';

/** Rates whose interval is a whole number of milliseconds, so the reference bucket below is exact. */
const budgetArb = fc.record({
  perSecond: fc.constantFrom(1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 200),
  burst: fc.integer({ min: 1, max: 200 }),
});
/** Request times: a non-decreasing sequence of whole milliseconds. */
const timesArb = fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 400 }).map((gaps) => {
  let t = 1_000_000;
  return gaps.map((g) => {
    t += g;
    return t;
  });
});

/** Replay takes through the GCRA: which were granted. */
function gcra(budget: Budget, times: readonly number[]): boolean[] {
  let tat: number | undefined;
  return times.map((t) => {
    const d = takeFromBudget(tat, t, budget);
    if (d.granted) tat = d.tat;
    return d.granted;
  });
}

/**
 * The textbook token bucket, in integers: tokens counted in milliseconds of
 * refill (one token = one interval), full at the start, refilled one per ms.
 */
function referenceBucket(budget: Budget, times: readonly number[]): boolean[] {
  const cost = intervalMs(budget);
  const capacity = budget.burst * cost;
  let tokens = capacity;
  let last = times[0] ?? 0;
  return times.map((t) => {
    tokens = Math.min(capacity, tokens + (t - last));
    last = t;
    if (tokens < cost) return false;
    tokens -= cost;
    return true;
  });
}

describe('takeFromBudget', () => {
  it('grants exactly what a token bucket of the same rate and burst grants, for any request times', () => {
    fc.assert(
      fc.property(budgetArb, timesArb, (budget, times) => {
        expect(gcra(budget, times)).toEqual(referenceBucket(budget, times));
      }),
    );
  });

  it('never grants more than burst + rate × window in any window', () => {
    fc.assert(
      fc.property(budgetArb, timesArb, (budget, times) => {
        const granted = times.filter((_, i) => gcra(budget, times)[i]);
        for (let i = 0; i < granted.length; i++) {
          for (let j = i; j < granted.length; j++) {
            const window = (granted[j] as number) - (granted[i] as number);
            expect(j - i + 1).toBeLessThanOrEqual(budget.burst + window / intervalMs(budget));
          }
        }
      }),
      { numRuns: 50 },
    );
  });

  it('says when the next token comes: granted at retryAfterMs, refused a millisecond before', () => {
    fc.assert(
      fc.property(budgetArb, fc.integer({ min: 1, max: 400 }), (budget, extra) => {
        const now = 5_000_000;
        let tat: number | undefined;
        for (let i = 0; i < budget.burst + extra; i++) {
          const d = takeFromBudget(tat, now, budget);
          if (d.granted) tat = d.tat;
        }
        const refused = takeFromBudget(tat, now, budget);
        expect(refused.granted).toBe(false);
        if (refused.granted) return;
        expect(takeFromBudget(tat, now + refused.retryAfterMs, budget).granted).toBe(true);
        if (refused.retryAfterMs >= 1) {
          expect(takeFromBudget(tat, now + refused.retryAfterMs - 1, budget).granted).toBe(false);
        }
      }),
    );
  });

  it('starts full: ECS at 20/s lets 100 launches go at once, the 101st waits 50 ms', () => {
    const ecs = { perSecond: 20, burst: 100 };
    const now = 1_000;
    let tat: number | undefined;
    for (let i = 0; i < 100; i++) {
      const d = takeFromBudget(tat, now, ecs);
      expect(d.granted).toBe(true);
      if (d.granted) tat = d.tat;
    }
    expect(tokensAt(tat, now, ecs)).toBe(0);
    expect(takeFromBudget(tat, now, ecs)).toEqual({ granted: false, retryAfterMs: 50 });
    expect(tokensAt(tat, now + 1000, ecs)).toBe(20);
    expect(tokensAt(tat, now + 60_000, ecs)).toBe(100);
  });
});

describe('isThrottling', () => {
  const sdk = (name: string, status: number) =>
    Object.assign(new Error('Rate exceeded'), { name, $metadata: { httpStatusCode: status } });

  it('sees a throttle through the launcher’s wrapping: ECS, ARM, Google, Kubernetes', () => {
    const ecs = new LauncherUnavailableError('ECS RunTask failed, will retry', {
      cause: sdk('ThrottlingException', 400),
    });
    expect(isThrottling(ecs)).toBe(true);
    expect(
      isThrottling(Object.assign(new Error('Too Many Requests'), { name: 'RestError', statusCode: 429 })),
    ).toBe(true);
    expect(isThrottling(Object.assign(new Error('Quota exceeded'), { code: 8 }))).toBe(true);
    expect(isThrottling(new LauncherUnavailableError('pod', { cause: { code: 429, body: {} } }))).toBe(true);
  });

  it('is not fooled by other failures', () => {
    expect(isThrottling(sdk('ClientException', 400))).toBe(false);
    expect(isThrottling(sdk('ServerException', 500))).toBe(false);
    expect(isThrottling(new LauncherUnavailableError('network', { cause: new Error('ECONNRESET') }))).toBe(
      false,
    );
    expect(isThrottling(undefined)).toBe(false);
  });
});

describe('the waiting reason', () => {
  const queued = newRun(
    { id: 'r1', kind: 'vm', targetId: 'vm-1', asset: 'a.yml', requestedBy: 'alice', timeoutSeconds: 600 },
    '2025-01-01T00:00:00.000Z',
  );

  it('names the backend', () => {
    expect(budgetWaitReason('ecs')).toBe('waiting: ECS launch budget');
    expect(budgetWaitReason('gcp')).toBe('waiting: Cloud Run launch budget');
    expect(isBudgetWaitReason(budgetWaitReason('kubernetes'))).toBe(true);
    expect(isBudgetWaitReason('Cancelled before launch')).toBe(false);
  });

  it('shows while the run waits and is gone once it launches', () => {
    const claimed = transition(queued, 'dispatching', '2025-01-01T00:00:01.000Z');
    const waiting = { ...amend(claimed, '2025-01-01T00:00:02.000Z', {}), reason: budgetWaitReason('ecs') };
    const retaken = amend(waiting, '2025-01-01T00:00:03.000Z', { owner: 'other' });
    expect(retaken.reason).toBe('waiting: ECS launch budget');
    const launched = transition(retaken, 'launched', '2025-01-01T00:00:04.000Z');
    expect(launched.reason).toBeUndefined();
    expect(transition(retaken, 'failed', 'x', { reason: 'boom' }).reason).toBe('boom');
  });
});

describe('joinLine', () => {
  it('spaces waiting runs one token apart, the first when the next token is due', () => {
    fc.assert(
      fc.property(budgetArb, fc.integer({ min: 1, max: 300 }), (budget, waiting) => {
        const now = 9_000_000;
        let tat: number | undefined;
        for (let i = 0; i < budget.burst; i++) {
          const d = takeFromBudget(tat, now, budget);
          if (d.granted) tat = d.tat;
        }
        const refused = takeFromBudget(tat, now, budget);
        if (refused.granted || tat === undefined) throw new Error('the bucket should be empty');
        let line: number | undefined;
        const waits: number[] = [];
        for (let i = 0; i < waiting; i++) {
          const q = joinLine(line, tat, now, budget);
          line = q.line;
          waits.push(q.waitMs);
        }
        expect(waits[0]).toBe(refused.retryAfterMs);
        waits.forEach((w, i) => {
          expect(w).toBeCloseTo(refused.retryAfterMs + i * intervalMs(budget), 6);
        });
        // Coming back in line order, each waiter finds its token.
        let t = tat;
        for (const w of waits) {
          const d = takeFromBudget(t, now + w, budget);
          expect(d.granted).toBe(true);
          if (d.granted) t = d.tat;
        }
      }),
    );
  });
});
