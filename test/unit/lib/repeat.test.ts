import { describe, expect, it } from 'vitest';
import { repeatWithoutOverlap } from '../../../shared/lib/repeat.ts';
import { sleep } from '../../../shared/lib/sleep.ts';

describe('repeatWithoutOverlap', () => {
  it('never starts a run while the previous one is going, and stop() waits for it', async () => {
    let active = 0;
    let most = 0;
    let runs = 0;
    let finished = 0;
    const repeating = repeatWithoutOverlap(
      async () => {
        runs += 1;
        active += 1;
        most = Math.max(most, active);
        await sleep(40);
        active -= 1;
        finished += 1;
      },
      2,
      () => {},
    );
    while (runs < 2) await sleep(5);
    await repeating.stop();

    expect(most).toBe(1);
    expect(active).toBe(0);
    expect(finished).toBe(runs);
  });

  it('hands a failure to onError and keeps repeating', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const repeating = repeatWithoutOverlap(
      async () => {
        runs += 1;
        throw new Error(`sweep ${runs} failed`);
      },
      2,
      (error) => errors.push(error),
    );
    while (runs < 3) await sleep(5);
    await repeating.stop();
    const after = runs;
    await sleep(20);

    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(String(errors[0])).toContain('sweep 1 failed');
    expect(runs).toBe(after);
  });
});
