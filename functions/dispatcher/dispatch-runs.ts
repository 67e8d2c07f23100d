import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { AppDeps } from '../../shared/app/deps.ts';
import { dispatchRun } from '../../shared/app/dispatch.ts';
import { partialBatchResponse } from '../../shared/composition/lambda/partial-batch.ts';
import { lambdaSqsHandler } from '../../shared/composition/lambda.ts';
import { decodeRunMessage } from '../../shared/domain/run-message.ts';

export type SqsBatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/**
 * An SQS-event handler over run messages with partial batch failure
 * reporting: a record that throws is retried alone; a poison body (no run id)
 * is dropped with the `dropped` log line, since redelivering it can never help.
 */
export function runMessageBatch(
  logger: AppDeps['logger'],
  dropped: string,
  each: (runId: string, record: SQSRecord) => Promise<unknown>,
): SqsBatchHandler {
  const record = async (r: SQSRecord) => {
    const message = decodeRunMessage(r.body);
    if (message === undefined) {
      logger.error(dropped, { messageId: r.messageId });
      return;
    }
    await each(message.runId, r);
  };
  return (event) => partialBatchResponse(event, record);
}

/** SQS-event handler for the dispatch queue: dispatch each run, a poison message dropped. */
export function makeDispatchRuns(deps: AppDeps & { readonly ownerId: string }): SqsBatchHandler {
  return runMessageBatch(deps.logger, 'dispatch: poison message dropped', (runId, r) =>
    dispatchRun(deps, runId, `${deps.ownerId}:${r.messageId}`),
  );
}

export const handler = lambdaSqsHandler(makeDispatchRuns);
