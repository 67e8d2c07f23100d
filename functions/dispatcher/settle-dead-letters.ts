import type { SQSRecord } from 'aws-lambda';
import type { AppDeps } from '../../shared/app/deps.ts';
import { settleDeadLetter } from '../../shared/app/dispatch.ts';
import { partialBatchResponse } from '../../shared/composition/lambda/partial-batch.ts';
import { lambdaSqsHandler } from '../../shared/composition/lambda.ts';
import { decodeRunMessage } from '../../shared/domain/run-message.ts';
import type { SqsBatchHandler } from './dispatch-runs.ts';

/** SQS-event handler for the dispatch DLQ: each dead message fails its run with the reason. */
/** `maxReceiveCount` is the source queue's redrive limit, quoted in the run's reason. */
export function makeSettleDeadLetters(
  deps: AppDeps,
  maxReceiveCount: number = deps.settings.dispatch_max_receive_count,
): SqsBatchHandler {
  const record = async (r: SQSRecord) => {
    const message = decodeRunMessage(r.body);
    if (message === undefined) {
      deps.logger.error('dead letter without a run id dropped', { messageId: r.messageId });
      return;
    }
    // The DLQ's own receive count says nothing about the dispatch attempts; the redrive limit does.
    await settleDeadLetter(deps, message.runId, maxReceiveCount);
  };
  return (event) => partialBatchResponse(event, record);
}

export const handler = lambdaSqsHandler(makeSettleDeadLetters);
