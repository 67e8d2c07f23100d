import { describe, expect, it } from 'vitest';
import { parseRetryAfter, withRetry } from '../../../shared/adapters/retry.ts';

/** A call that fails `failures` times with `error`, then answers `ok`. */
const flaky = (failures: number, error: unknown = new Error('503')) => {
  let calls = 0;
  const call = async () => {
    calls += 1;
    if (calls <= failures) throw error;
    return 'ok';
  };
  return { call, calls: () => calls };
};

describe('withRetry', () => {
  it('tries again after a retryable failure, waiting a capped, jittered, doubling backoff', async () => {
    const waits: number[] = [];
    const { call, calls } = flaky(3);

    const value = await withRetry(call, {
      retryable: () => true,
      attempts: 4,
      baseMs: 100,
      maxMs: 300,
      random: () => 0.5,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });

    expect(value).toBe('ok');
    expect(calls()).toBe(4);
    expect(waits).toEqual([50, 100, 150]);
  });

  it('gives up after its attempts, and at once on a failure that is not retryable', async () => {
    const persistent = flaky(10);
    const permanent = flaky(10, new Error('400'));
    const pause = async () => {};

    await expect(
      withRetry(persistent.call, { retryable: () => true, attempts: 3, sleep: pause }),
    ).rejects.toThrow('503');
    await expect(
      withRetry(permanent.call, { retryable: (e) => (e as Error).message !== '400', sleep: pause }),
    ).rejects.toThrow('400');
    expect(persistent.calls()).toBe(3);
    expect(permanent.calls()).toBe(1);
  });

  it('waits at least what the server asked for, but never above the ceiling', async () => {
    const waits: number[] = [];
    const sleep = async (ms: number) => {
      waits.push(ms);
    };

    await withRetry(flaky(1).call, {
      retryable: () => true,
      retryAfterMs: () => 2000,
      random: () => 0,
      sleep,
    });
    await withRetry(flaky(1).call, {
      retryable: () => true,
      retryAfterMs: () => 60_000,
      maxMs: 5000,
      random: () => 0,
      sleep,
    });

    expect(waits).toEqual([2000, 5000]);
  });

  it('sleeps for real when no sleep is injected', async () => {
    const started = performance.now();

    await withRetry(flaky(1).call, { retryable: () => true, baseMs: 40, random: () => 1 });

    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds and HTTP dates, and nothing else', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');

    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
