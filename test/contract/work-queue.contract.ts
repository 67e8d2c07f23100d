import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/domain/errors.ts';
import type { QueueMessage, WorkQueue } from '../../shared/ports/work-queue.ts';

export interface WorkQueueFixture {
  readonly queue: WorkQueue;
  /** Where `queue` moves a message after `maxReceiveCount` receives. */
  readonly deadLetter: WorkQueue;
  cleanup(): Promise<void>;
}

export interface WorkQueueSettings {
  readonly visibilityTimeoutSeconds: number;
  readonly maxReceiveCount: number;
}

export interface WorkQueueContractOptions {
  /**
   * Whether `delete` with a receipt handle made stale by a redelivery leaves
   * the message in place. SQS does not promise it ("the request succeeds, but
   * the message might not be deleted"); the SQLite queue does.
   */
  readonly staleReceiptHandleKeepsMessage?: boolean;
}

/**
 * Timing: the default visibility timeout is 1 s so redelivery tests are
 * short, but every "must stay invisible" check overrides it with 30 s on the
 * receive, so a stalled, loaded machine cannot make the message reappear early.
 * Waits for something to arrive are long polls of several seconds.
 */
const SETTINGS: WorkQueueSettings = { visibilityTimeoutSeconds: 1, maxReceiveCount: 2 };
const HOLD = 30;

/** Long-poll until `count` messages arrived or `seconds` passed (SQS may hand out fewer than asked). */
async function receiveAll(queue: WorkQueue, count: number, seconds = 8): Promise<QueueMessage[]> {
  const got: QueueMessage[] = [];
  const deadline = Date.now() + seconds * 1000;
  while (got.length < count && Date.now() < deadline) {
    const waitSeconds = Math.max(1, Math.min(5, Math.ceil((deadline - Date.now()) / 1000)));
    got.push(
      ...(await queue.receive({
        max: Math.min(10, count - got.length),
        waitSeconds,
        visibilityTimeoutSeconds: HOLD,
      })),
    );
  }
  return got;
}

/**
 * The WorkQueue contract. Every adapter (SQLite, SQS) runs this same suite;
 * the factory builds a fresh queue and its dead-letter queue per test.
 *
 * @example
 * workQueueContract('sqlite', async ({ visibilityTimeoutSeconds, maxReceiveCount }) => {
 *   const db = openDatabase(':memory:');
 *   const deadLetter = new SqliteWorkQueue({ db, name: 'dlq', visibilityTimeoutSeconds: 30 });
 *   const queue = new SqliteWorkQueue({ db, name: 'q', visibilityTimeoutSeconds, maxReceiveCount, deadLetter });
 *   return { queue, deadLetter, cleanup: async () => db.close() };
 * });
 */
export function workQueueContract(
  name: string,
  makeQueue: (settings: WorkQueueSettings) => Promise<WorkQueueFixture>,
  options: WorkQueueContractOptions = {},
): void {
  const strictReceipts = options.staleReceiptHandleKeepsMessage ?? true;

  describe(`WorkQueue contract: ${name}`, () => {
    let fixture: WorkQueueFixture | undefined;
    const open = async (overrides: Partial<WorkQueueSettings> = {}): Promise<WorkQueueFixture> => {
      fixture = await makeQueue({ ...SETTINGS, ...overrides });
      return fixture;
    };
    afterEach(async () => {
      await fixture?.cleanup();
      fixture = undefined;
    });

    it('delivers a sent message with its id, body, receive count 1 and send time', async () => {
      const { queue } = await open();
      const before = Date.now();

      const id = await queue.send('{"runId":"r-1"}');
      const [message, ...rest] = await receiveAll(queue, 1);

      expect(rest).toEqual([]);
      expect(message).toMatchObject({ id, body: '{"runId":"r-1"}', receiveCount: 1 });
      expect(message?.receiptHandle).toEqual(expect.any(String));
      expect(Date.parse(message?.sentAt ?? '')).toBeGreaterThanOrEqual(before - 1000);
    });

    it('hides a received message from other receivers until its visibility timeout', async () => {
      const { queue } = await open();
      await queue.send('hidden');
      expect(await receiveAll(queue, 1)).toHaveLength(1);

      expect(await queue.receive({ max: 10, waitSeconds: 1 })).toEqual([]);
    });

    it('never delivers a deleted message again', async () => {
      const { queue } = await open();
      await queue.send('done');
      const [message] = await queue.receive({ max: 1, waitSeconds: 5, visibilityTimeoutSeconds: 1 });
      expect(message).toBeDefined();

      await queue.delete(message?.receiptHandle ?? '');

      await sleep(1500);
      expect(await queue.receive({ max: 10, waitSeconds: 2 })).toEqual([]);
    });

    it('redelivers after the visibility timeout with receive count 2 and a new receipt handle', async () => {
      const { queue } = await open();
      const id = await queue.send('again');
      const [first] = await queue.receive({ max: 1, waitSeconds: 5 });

      const [second] = await queue.receive({ max: 1, waitSeconds: 10, visibilityTimeoutSeconds: HOLD });

      expect(first).toMatchObject({ id, body: 'again', receiveCount: 1 });
      expect(second).toMatchObject({ id, body: 'again', receiveCount: 2, sentAt: first?.sentAt });
      expect(second?.receiptHandle).not.toBe(first?.receiptHandle);
    });

    it('accepts a stale receipt handle without error after a redelivery', async () => {
      // A third receive must not dead-letter the message: that would hide whether the stale delete removed it.
      const { queue } = await open({ maxReceiveCount: 5 });
      await queue.send('stale');
      const [first] = await queue.receive({ max: 1, waitSeconds: 5 });
      const [second] = await queue.receive({ max: 1, waitSeconds: 10, visibilityTimeoutSeconds: 1 });
      expect(second?.receiveCount).toBe(2);

      await expect(queue.delete(first?.receiptHandle ?? '')).resolves.toBeUndefined();

      if (strictReceipts) {
        const [third] = await queue.receive({ max: 1, waitSeconds: 10, visibilityTimeoutSeconds: HOLD });
        expect(third).toMatchObject({ id: second?.id, receiveCount: 3 });
      }
    });

    it('makes a message visible again at once with changeVisibility 0', async () => {
      const { queue } = await open();
      await queue.send('retry now');
      const [first] = await receiveAll(queue, 1);

      await queue.changeVisibility(first?.receiptHandle ?? '', 0);
      const [again] = await queue.receive({ max: 1, waitSeconds: 5, visibilityTimeoutSeconds: HOLD });

      expect(again).toMatchObject({ id: first?.id, receiveCount: 2 });
    });

    it('keeps a message hidden longer when its visibility is extended', async () => {
      const { queue } = await open();
      await queue.send('slow work');
      const [message] = await queue.receive({ max: 1, waitSeconds: 5, visibilityTimeoutSeconds: 2 });

      await queue.changeVisibility(message?.receiptHandle ?? '', HOLD);

      expect(await queue.receive({ max: 1, waitSeconds: 3 })).toEqual([]);
    });

    it('moves a message to the dead-letter queue after maxReceiveCount receives, keeping id, body and sentAt', async () => {
      const { queue, deadLetter } = await open();
      const id = await queue.send('poison');
      const [first] = await queue.receive({ max: 1, waitSeconds: 5 });
      const [second] = await queue.receive({ max: 1, waitSeconds: 10 });
      expect([first?.receiveCount, second?.receiveCount]).toEqual([1, 2]);

      // A receive after the second visibility timeout is what triggers the move (as in SQS).
      const third = await queue.receive({ max: 1, waitSeconds: 4 });
      const [dead] = await receiveAll(deadLetter, 1, 15);

      expect(third).toEqual([]);
      expect(dead).toMatchObject({ id, body: 'poison', sentAt: first?.sentAt });
    });

    it('holds back a delayed message until its delay has passed', async () => {
      const { queue } = await open();
      const sentAt = Date.now();

      await queue.send('later', { delaySeconds: 3 });
      const early = await queue.receive({ max: 1 });
      const [late] = await queue.receive({ max: 1, waitSeconds: 10 });

      expect(early).toEqual([]);
      expect(late?.body).toBe('later');
      expect(Date.now() - sentAt).toBeGreaterThanOrEqual(2500);
    });

    it('sends a batch of 10', async () => {
      const { queue } = await open();
      const bodies = Array.from({ length: 10 }, (_, i) => `m-${i}`);

      await queue.sendBatch(bodies);
      const got = await receiveAll(queue, 10);

      expect(got.map((m) => m.body).sort()).toEqual([...bodies].sort());
      expect(new Set(got.map((m) => m.id)).size).toBe(10);
    });

    it('refuses a batch of 11 and a receive of more than 10 with ValidationError', async () => {
      const { queue } = await open();

      await expect(queue.sendBatch(Array.from({ length: 11 }, (_, i) => `m-${i}`))).rejects.toBeInstanceOf(
        ValidationError,
      );
      await expect(queue.receive({ max: 11 })).rejects.toBeInstanceOf(ValidationError);
      expect(await queue.receive({ max: 10, waitSeconds: 1 })).toEqual([]);
    });

    it('returns a long poll soon after a send', async () => {
      const { queue } = await open();
      const polling = queue.receive({ max: 1, waitSeconds: 15, visibilityTimeoutSeconds: HOLD });
      await sleep(300);

      const sentAt = Date.now();
      await queue.send('wake up');
      const [message] = await polling;

      expect(message?.body).toBe('wake up');
      expect(Date.now() - sentAt).toBeLessThan(5000);
    });

    it('returns an empty long poll after about waitSeconds', async () => {
      const { queue } = await open();
      const started = Date.now();

      const got = await queue.receive({ max: 1, waitSeconds: 1 });

      expect(got).toEqual([]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    });

    it('keeps queues apart', async () => {
      const { queue, deadLetter } = await open();

      await deadLetter.send('for the dlq only');

      expect(await queue.receive({ max: 10, waitSeconds: 1 })).toEqual([]);
      expect((await receiveAll(deadLetter, 1)).map((m) => m.body)).toEqual(['for the dlq only']);
    });
  });
}
