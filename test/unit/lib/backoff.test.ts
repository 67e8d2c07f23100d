import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffMs } from '../../../shared/lib/backoff.ts';

describe('backoffMs', () => {
  it('doubles from the base with each exponent', () => {
    expect([0, 1, 2, 3].map((n) => backoffMs(n, { baseMs: 200 }))).toEqual([200, 400, 800, 1600]);
  });

  it('never exceeds its ceiling', () => {
    expect(backoffMs(10, { baseMs: 200, maxMs: 5000 })).toBe(5000);
    expect(backoffMs(4, { baseMs: 200, maxMs: 5000 })).toBe(3200);
  });

  it('scales the capped delay by the jitter factor', () => {
    expect(backoffMs(2, { baseMs: 100, maxMs: 300, jitter: () => 0.5 })).toBe(150);
    expect(backoffMs(0, { baseMs: 100, jitter: () => 0 })).toBe(0);
  });

  it('stays within [0, cap) under full jitter', () => {
    fc.assert(
      fc.property(
        fc.nat(40),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 60_000 }),
        (n, base, max) => {
          const ms = backoffMs(n, { baseMs: base, maxMs: max, jitter: Math.random });
          return ms >= 0 && ms < Math.min(max, base * 2 ** n);
        },
      ),
    );
  });
});
