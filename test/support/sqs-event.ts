import type { Message } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';

/** The dispatch queue's ARN in the tests' moto account. */
const DISPATCH_QUEUE_ARN = 'arn:aws:sqs:us-east-1:123456789012:rw-dispatch';

/**
 * What Lambda's SQS event source hands a function for messages it received:
 * each record carries the message's own attributes where the receive asked
 * for them, the receive count `receiveCount` when given (a redelivery), and
 * the queue's ARN and region.
 *
 * @example
 * await handler(sqsEvent(messages, { receiveCount: 2 }), context);
 */
export function sqsEvent(
  messages: readonly Message[],
  options: { readonly queueArn?: string; readonly receiveCount?: number } = {},
): SQSEvent {
  const queueArn = options.queueArn ?? DISPATCH_QUEUE_ARN;
  return {
    Records: messages.map((m) => ({
      messageId: m.MessageId ?? '',
      receiptHandle: m.ReceiptHandle ?? '',
      body: m.Body ?? '',
      attributes: {
        ApproximateReceiveCount:
          options.receiveCount === undefined
            ? (m.Attributes?.ApproximateReceiveCount ?? '1')
            : String(options.receiveCount),
        SentTimestamp: m.Attributes?.SentTimestamp ?? String(Date.now()),
        SenderId: m.Attributes?.SenderId ?? 'test',
        ApproximateFirstReceiveTimestamp:
          m.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      },
      messageAttributes: {},
      md5OfBody: m.MD5OfBody ?? '',
      eventSource: 'aws:sqs',
      eventSourceARN: queueArn,
      awsRegion: queueArn.split(':')[3] ?? 'us-east-1',
    })),
  };
}
