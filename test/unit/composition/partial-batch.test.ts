import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { partialBatchResponse } from '../../../shared/composition/lambda/partial-batch.ts';

const record = (messageId: string, body: string): SQSRecord => ({
  messageId,
  receiptHandle: `rh-${messageId}`,
  body,
  attributes: {
    ApproximateReceiveCount: '1',
    SentTimestamp: '0',
    SenderId: 'sender',
    ApproximateFirstReceiveTimestamp: '0',
  },
  messageAttributes: {},
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: 'arn:aws:sqs:eu-west-1:111111111111:dispatch',
  awsRegion: 'eu-west-1',
});
const batch = (...records: SQSRecord[]): SQSEvent => ({ Records: records });

describe('partialBatchResponse (the SQS functions’ partial batch answer)', () => {
  it('reports the message id of each record whose handler threw, and only those', async () => {
    const seen: string[] = [];
    const answer = await partialBatchResponse(
      batch(record('m1', 'ok'), record('m2', 'boom'), record('m3', 'ok'), record('m4', 'boom')),
      async (r) => {
        seen.push(r.messageId);
        if (r.body === 'boom') throw new Error(`failed ${r.messageId}`);
      },
    );
    expect(answer).toEqual({ batchItemFailures: [{ itemIdentifier: 'm2' }, { itemIdentifier: 'm4' }] });
    expect(seen.sort()).toEqual(['m1', 'm2', 'm3', 'm4']);
  });

  it('answers an empty failure list when every record is handled', async () => {
    expect(await partialBatchResponse(batch(record('m1', 'ok')), async () => undefined)).toEqual({
      batchItemFailures: [],
    });
  });

  it('answers (does not throw) when every record failed, so SQS redelivers each of them', async () => {
    const answer = await partialBatchResponse(batch(record('m1', 'x'), record('m2', 'y')), async () => {
      throw new Error('down');
    });
    expect(answer.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['m1', 'm2']);
  });

  it('counts a handler that throws before its first await as a failed record, not a failed batch', async () => {
    const answer = await partialBatchResponse(batch(record('m1', 'x'), record('m2', 'y')), (r) => {
      if (r.messageId === 'm1') throw new Error('synchronous');
      return Promise.resolve();
    });
    expect(answer).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }] });
  });

  it('handles the records at once, not one after another', async () => {
    let inFlight = 0;
    let most = 0;
    await partialBatchResponse(batch(record('m1', ''), record('m2', ''), record('m3', '')), async () => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
    });
    expect(most).toBe(3);
  });

  it('refuses an event that is not an SQS batch', async () => {
    await expect(partialBatchResponse({} as SQSEvent, async () => undefined)).rejects.toThrow(/no Records/);
  });
});
