import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { sleep } from '../../shared/lib/sleep.ts';
import type { Logger } from '../../shared/ports/logger.ts';
import type { QueueMessage, WorkQueue } from '../../shared/ports/work-queue.ts';

type SqsHandler = (
  event: SQSEvent,
  context: Context,
) => Promise<{ batchItemFailures: { itemIdentifier: string }[] }>;

const toRecord = (queue: WorkQueue, m: QueueMessage): SQSRecord => ({
  messageId: m.id,
  receiptHandle: m.receiptHandle,
  body: m.body,
  attributes: {
    ApproximateReceiveCount: String(m.receiveCount),
    SentTimestamp: String(Date.parse(m.sentAt)),
    SenderId: 'local',
    ApproximateFirstReceiveTimestamp: String(Date.now()),
  },
  messageAttributes: {},
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: `arn:aws:sqs:local:000000000000:${queue.name}`,
  awsRegion: 'local',
});

/**
 * What Lambda's SQS event source mapping does, for local mode: receive a
 * batch, invoke the SQS handler, delete the records it did not report as
 * failed. Failed ones stay hidden until their visibility timeout, then come
 * back, and dead-letter after the queue's maxReceiveCount.
 *
 * @example
 * const pump = new QueuePump(dispatchQueue, dispatchHandler, logger);
 * pump.start(); … await pump.stop();
 */
export class QueuePump {
  private running = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly queue: WorkQueue,
    private readonly handler: SqsHandler,
    private readonly logger: Logger,
    private readonly options: { batchSize?: number; waitSeconds?: number } = {},
  ) {}

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        const messages = await this.queue.receive({
          max: this.options.batchSize ?? 10,
          waitSeconds: this.options.waitSeconds ?? 1,
        });
        if (messages.length === 0) continue;
        const event: SQSEvent = { Records: messages.map((m) => toRecord(this.queue, m)) };
        const failed = new Set<string>();
        try {
          const response = await this.handler(event, { awsRequestId: messages[0]?.id } as Context);
          for (const f of response.batchItemFailures) failed.add(f.itemIdentifier);
        } catch (error) {
          this.logger.error('queue handler threw; the whole batch will be retried', {
            queue: this.queue.name,
            error: error as Error,
          });
          for (const m of messages) failed.add(m.id);
        }
        for (const m of messages) {
          if (!failed.has(m.id)) await this.queue.delete(m.receiptHandle);
        }
      } catch (error) {
        this.logger.error('queue pump failed; retrying', { queue: this.queue.name, error: error as Error });
        await sleep(1000);
      }
    }
  }
}
