import * as limits from '../queue-limits.ts';

/**
 * An SQS queue's name, the last segment of its URL (for logs and relay
 * handles). Throws a ValidationError for what is not an http(s) queue URL.
 * Apart from the adapter so a queue can be named without loading the SDK.
 *
 * @example
 * sqsQueueName('https://sqs.eu-west-1.amazonaws.com/111111111111/dispatch'); // 'dispatch'
 */
export function sqsQueueName(queueUrl: string): string {
  const name = queueUrl
    .split('/')
    .filter((s) => s !== '')
    .at(-1);
  if (name === undefined || !/^https?:\/\//.test(queueUrl)) {
    throw limits.invalid('queueUrl', 'must be an SQS queue URL');
  }
  return name;
}
