import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { once } from '../../lib/once.ts';
import type { QueueMessage, ReceiveOptions, WorkQueue } from '../../ports/work-queue.ts';
import * as limits from '../queue-limits.ts';
import { sqsQueueName } from './queue-name.ts';

/** Entries that failed on the service side (not our fault) are sent again this many times. */
const BATCH_RETRIES = 2;

const errorName = (error: unknown): string | undefined => (error instanceof Error ? error.name : undefined);

/** One client per cold start, shared by every queue built without an injected client. */
const defaultClient = once((): SQSClient => new SQSClient({}));

export interface SqsWorkQueueOptions {
  readonly queueUrl: string;
  /** Defaults to one client per process, configured from the environment (AWS_REGION, AWS_ENDPOINT_URL …). */
  readonly client?: SQSClient;
}

/**
 * WorkQueue over one standard SQS queue. The dead-letter queue and
 * `maxReceiveCount` are the queue's RedrivePolicy, set by infrastructure;
 * the visibility timeout default is the queue's own.
 *
 * Unlike the SQLite queue, a receipt handle made stale by a redelivery is
 * accepted and the message "might not be deleted" (SQS's words): callers rely
 * on the run's conditional writes, never on the queue, for exactly-once.
 *
 * @example
 * const queue = new SqsWorkQueue({ queueUrl: process.env.DISPATCH_QUEUE_URL });
 * await queue.sendBatch(runs.map((r) => encodeRunMessage(r.id)));
 * for (const m of await queue.receive({ max: 10, waitSeconds: 20 })) {
 *   await handle(m.body);
 *   await queue.delete(m.receiptHandle);
 * }
 */
export class SqsWorkQueue implements WorkQueue {
  /** The queue's name (last segment of its URL), for logs and relay handles. */
  readonly name: string;
  readonly queueUrl: string;
  readonly #client: SQSClient;

  constructor(options: SqsWorkQueueOptions) {
    this.name = sqsQueueName(options.queueUrl);
    this.queueUrl = options.queueUrl;
    this.#client = options.client ?? defaultClient();
  }

  async send(body: string, options: { delaySeconds?: number } = {}): Promise<string> {
    const delaySeconds = options.delaySeconds ?? 0;
    limits.checkSeconds('delaySeconds', delaySeconds, limits.MAX_DELAY_SECONDS);
    limits.checkBody(body, 'body');
    const { MessageId } = await this.#client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: body,
        ...(delaySeconds === 0 ? {} : { DelaySeconds: delaySeconds }),
      }),
    );
    if (MessageId === undefined)
      throw new Error(`SQS answered SendMessage to ${this.name} without a MessageId`);
    return MessageId;
  }

  /**
   * One SendMessageBatch. Entries SQS failed on its side are sent again (up
   * to twice); any entry still failing, or refused as our fault, makes the
   * call throw an error naming each failed entry by index with SQS's code.
   * The entries that did succeed stay sent: a caller that retries the whole
   * batch sends those again, which at-least-once consumers already tolerate.
   */
  async sendBatch(bodies: readonly string[]): Promise<void> {
    limits.checkSendBatch(bodies);
    let pending: SendMessageBatchRequestEntry[] = bodies.map((body, i) => ({
      Id: String(i),
      MessageBody: body,
    }));
    for (let attempt = 0; ; attempt += 1) {
      const { Failed = [] } = await this.#client.send(
        new SendMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: pending }),
      );
      if (Failed.length === 0) return;
      const retryable = Failed.filter((f) => f.SenderFault !== true);
      if (retryable.length < Failed.length || attempt >= BATCH_RETRIES) {
        const detail = Failed.map(
          (f) => `bodies[${f.Id}]: ${f.Code ?? 'error'} (${f.Message ?? 'no message'})`,
        );
        throw new Error(
          `SQS refused ${Failed.length} of ${bodies.length} messages to ${this.name}: ${detail.join('; ')}`,
        );
      }
      const again = new Set(retryable.map((f) => f.Id));
      pending = pending.filter((entry) => again.has(entry.Id));
    }
  }

  async receive(options: ReceiveOptions): Promise<readonly QueueMessage[]> {
    const { max } = options;
    const waitSeconds = options.waitSeconds ?? 0;
    limits.checkReceive(max, waitSeconds);
    if (options.visibilityTimeoutSeconds !== undefined) {
      limits.checkSeconds(
        'visibilityTimeoutSeconds',
        options.visibilityTimeoutSeconds,
        limits.MAX_VISIBILITY_SECONDS,
      );
    }
    const { Messages = [] } = await this.#client.send(
      new ReceiveMessageCommand({
        QueueUrl: this.queueUrl,
        MaxNumberOfMessages: max,
        WaitTimeSeconds: waitSeconds,
        ...(options.visibilityTimeoutSeconds === undefined
          ? {}
          : { VisibilityTimeout: options.visibilityTimeoutSeconds }),
        MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
      }),
    );
    return Messages.map((m): QueueMessage => {
      if (m.MessageId === undefined || m.ReceiptHandle === undefined || m.Body === undefined) {
        throw new Error(`SQS answered ReceiveMessage on ${this.name} with an incomplete message`);
      }
      const count = Number(m.Attributes?.ApproximateReceiveCount ?? '1');
      const sent = Number(m.Attributes?.SentTimestamp);
      return {
        id: m.MessageId,
        body: m.Body,
        receiptHandle: m.ReceiptHandle,
        receiveCount: Number.isInteger(count) && count > 0 ? count : 1,
        sentAt: new Date(Number.isFinite(sent) ? sent : Date.now()).toISOString(),
      };
    });
  }

  async delete(receiptHandle: string): Promise<void> {
    await this.#client.send(
      new DeleteMessageCommand({ QueueUrl: this.queueUrl, ReceiptHandle: receiptHandle }),
    );
  }

  /** A message that is no longer in flight (visible again, or deleted) has no visibility to change: a no-op. */
  async changeVisibility(receiptHandle: string, timeoutSeconds: number): Promise<void> {
    limits.checkSeconds('timeoutSeconds', timeoutSeconds, limits.MAX_VISIBILITY_SECONDS);
    try {
      await this.#client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: this.queueUrl,
          ReceiptHandle: receiptHandle,
          VisibilityTimeout: timeoutSeconds,
        }),
      );
    } catch (error) {
      if (errorName(error) === 'MessageNotInflight') return;
      throw error;
    }
  }
}
