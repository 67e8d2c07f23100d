import type { EcsTaskStateChangeEvent } from '../../shared/adapters/ecs/task-event.ts';
import { backoffMs } from '../../shared/lib/backoff.ts';
import { sleep } from '../../shared/lib/sleep.ts';

const DELIVERY_ATTEMPTS = 5;

/**
 * Hand one event to `deliver`, retrying a rejection as EventBridge retries a
 * target: five attempts, 200 ms doubling between them; after the last one
 * `onGiveUp` hears the error. Never rejects.
 *
 * @example
 * await deliverWithRetries(deliver, event, (error) => logger.error('event not delivered', { error }));
 */
export async function deliverWithRetries(
  deliver: (event: EcsTaskStateChangeEvent) => Promise<unknown>,
  event: EcsTaskStateChangeEvent,
  onGiveUp: (error: unknown) => void,
  baseDelayMs = 100,
): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await deliver(event);
      return;
    } catch (error) {
      if (attempt >= DELIVERY_ATTEMPTS) {
        onGiveUp(error);
        return;
      }
      await sleep(backoffMs(attempt, { baseMs: baseDelayMs }));
    }
  }
}
