import { describe, expect, it } from 'vitest';
import { sleep } from '../../../shared/lib/sleep.ts';

describe('sleep', () => {
  it('waits about the time it is given', async () => {
    const started = performance.now();
    await sleep(40);
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
  });

  it('ends early, without an error, when its signal aborts', async () => {
    const controller = new AbortController();
    const started = performance.now();
    setTimeout(() => controller.abort(), 20);
    await expect(sleep(10_000, controller.signal)).resolves.toBeUndefined();
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('returns at once for a signal aborted before the call', async () => {
    const started = performance.now();
    await sleep(10_000, AbortSignal.abort());
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('waits the whole time when its signal never aborts', async () => {
    const started = performance.now();
    await sleep(40, new AbortController().signal);
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
  });
});
