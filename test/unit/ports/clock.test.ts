import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../../shared/ports/clock.ts';

describe('systemClock', () => {
  afterEach(() => vi.useRealTimers());

  it('answers the ISO-8601 time of the current millisecond, again within it and anew after it', () => {
    vi.useFakeTimers();
    vi.setSystemTime(Date.parse('2026-12-07T03:00:00.123Z'));
    const first = systemClock.now();
    const again = systemClock.now();
    vi.setSystemTime(Date.parse('2026-12-07T03:00:00.124Z'));
    const next = systemClock.now();
    vi.setSystemTime(Date.parse('2026-12-07T02:59:59.999Z')); // a clock stepped back
    const back = systemClock.now();

    expect([first, again, next, back]).toEqual([
      '2026-12-07T03:00:00.123Z',
      '2026-12-07T03:00:00.123Z',
      '2026-12-07T03:00:00.124Z',
      '2026-12-07T02:59:59.999Z',
    ]);
    expect(systemClock.nowMs()).toBe(Date.parse('2026-12-07T02:59:59.999Z'));
  });

  it('matches Date on the real clock', () => {
    const before = Date.now();
    const at = Date.parse(systemClock.now());
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());
  });
});
