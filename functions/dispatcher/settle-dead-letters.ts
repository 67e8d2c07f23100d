import type { AppDeps } from '../../shared/app/deps.ts';
import { settleDeadLetter } from '../../shared/app/dispatch.ts';
import { lambdaSqsHandler } from '../../shared/composition/lambda.ts';
import { runMessageBatch, type SqsBatchHandler } from './dispatch-runs.ts';

/** SQS-event handler for the dispatch DLQ: each dead message fails its run with the reason. */
/** `maxReceiveCount` is the source queue's redrive limit, quoted in the run's reason. */
export function makeSettleDeadLetters(
  deps: AppDeps,
  maxReceiveCount: number = deps.settings.dispatch_max_receive_count,
): SqsBatchHandler {
  // The DLQ's own receive count says nothing about the dispatch attempts; the redrive limit does.
  return runMessageBatch(deps.logger, 'dead letter without a run id dropped', (runId) =>
    settleDeadLetter(deps, runId, maxReceiveCount),
  );
}

export const handler = lambdaSqsHandler(makeSettleDeadLetters);
