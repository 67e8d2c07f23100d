/**
 * At-least-once message queue with a visibility timeout, a receive count and
 * a dead-letter queue after `maxReceiveCount` receives (SQS semantics). Bodies
 * carry ids only, never a secret value.
 *
 * @example
 * await queue.send(JSON.stringify({ runId }));
 * for (const m of await queue.receive({ max: 10, waitSeconds: 20 })) {
 *   await handle(m.body);
 *   await queue.delete(m.receiptHandle);
 * }
 */
export interface QueueMessage {
  readonly id: string;
  readonly body: string;
  readonly receiptHandle: string;
  /** 1 on first delivery. */
  readonly receiveCount: number;
  /** ISO timestamp of the first send. */
  readonly sentAt: string;
}

export interface ReceiveOptions {
  /** 1..10 */
  readonly max: number;
  /** Long poll: wait up to this long for a first message (0 = return at once). */
  readonly waitSeconds?: number;
  /** Override the queue's default visibility timeout for these messages. */
  readonly visibilityTimeoutSeconds?: number;
}

export interface WorkQueue {
  /** Queue name or URL, for logs. */
  readonly name: string;
  send(body: string, options?: { delaySeconds?: number }): Promise<string>;
  /** Up to 10 bodies; all are sent or the call throws. */
  sendBatch(bodies: readonly string[]): Promise<void>;
  receive(options: ReceiveOptions): Promise<readonly QueueMessage[]>;
  delete(receiptHandle: string): Promise<void>;
  changeVisibility(receiptHandle: string, timeoutSeconds: number): Promise<void>;
}
