import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { AppDeps } from '../../shared/app/deps.ts';
import { dispatchRun } from '../../shared/app/dispatch.ts';
import { partialBatchResponse } from '../../shared/composition/lambda/partial-batch.ts';
import { lambdaSqsHandler } from '../../shared/composition/lambda.ts';
import { decodeRunMessage } from '../../shared/domain/run-message.ts';

export type SqsBatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/**
 * SQS-event handler for the dispatch queue with partial batch failure
 * reporting: a record that throws is retried alone; a poison body (no run id)
 * is dropped with a log line, since redelivering it can never help.
 */
export function makeDispatchRuns(deps: AppDeps & { readonly ownerId: string }): SqsBatchHandler {
  const record = async (r: SQSRecord) => {
    const message = decodeRunMessage(r.body);
    if (message === undefined) {
      deps.logger.error('dispatch: poison message dropped', { messageId: r.messageId });
      return;
    }
    await dispatchRun(deps, message.runId, `${deps.ownerId}:${r.messageId}`);
  };
  return (event) => partialBatchResponse(event, record);
}

export const handler = lambdaSqsHandler(makeDispatchRuns);
