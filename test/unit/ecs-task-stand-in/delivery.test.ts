import { describe, expect, it } from 'vitest';
import type { EcsTaskStateChangeEvent } from '../../../functions/status-sync/ecs-task-state-change.ts';
import { deliverWithRetries } from '../../../tools/ecs-task-stand-in/delivery.ts';

const event = { id: 'e-1' } as unknown as EcsTaskStateChangeEvent;

describe('deliverWithRetries', () => {
  it('retries a rejection until the target takes the event', async () => {
    let calls = 0;
    const gaveUp: unknown[] = [];

    await deliverWithRetries(
      async () => {
        calls += 1;
        if (calls < 3) throw new Error(`down ${calls}`);
      },
      event,
      (error) => gaveUp.push(error),
      1,
    );

    expect(calls).toBe(3);
    expect(gaveUp).toEqual([]);
  });

  it('gives up after five attempts, hands over the last error and does not reject', async () => {
    let calls = 0;
    const gaveUp: unknown[] = [];

    await deliverWithRetries(
      async () => {
        calls += 1;
        throw new Error(`down ${calls}`);
      },
      event,
      (error) => gaveUp.push(error),
      1,
    );

    expect(calls).toBe(5);
    expect(gaveUp).toEqual([new Error('down 5')]);
  });
});
