import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';

/**
 * An SQS partial batch response: every record of the batch handled at once,
 * and the message id of each one whose handler threw reported back, so SQS
 * redelivers only those (the event source mapping's ReportBatchItemFailures).
 * A batch whose every record failed is answered the same way, never thrown:
 * throwing would redeliver the records that did succeed too.
 *
 * Hand-written rather than Powertools' BatchProcessor/processPartialResponse
 * (which the dispatcher functions used, with `throwOnFullBatchFailure: false`
 * and the same answer): for the one event type we take it is this
 * `Promise.allSettled`, while the package loads its processor classes, its
 * store, the event-type tables of the other sources and Powertools' commons
 * into every cold start of a worker.
 *
 * @example
 * export const handler = (event: SQSEvent) => partialBatchResponse(event, (r) => dispatch(r.body));
 * // → { batchItemFailures: [{ itemIdentifier: '<messageId of the record that threw>' }] }
 */
export async function partialBatchResponse(
  event: SQSEvent,
  record: (record: SQSRecord) => Promise<unknown>,
): Promise<SQSBatchResponse> {
  if (!Array.isArray(event.Records)) {
    throw new TypeError('Not an SQS event: it carries no Records list');
  }
  const records = event.Records;
  const settled = await Promise.allSettled(records.map(async (r) => record(r)));
  return {
    batchItemFailures: settled.flatMap((outcome, i) =>
      outcome.status === 'rejected' ? [{ itemIdentifier: records[i]?.messageId ?? '' }] : [],
    ),
  };
}
