import type { Context, ScheduledEvent } from 'aws-lambda';
import type { AppDeps } from '../../shared/app/deps.ts';
import { BackendPoller, pollerOptionsFrom } from '../../shared/app/poll-backends.ts';
import { pollsAnyBackend } from '../../shared/composition/lambda/polled-backends.ts';
import { lambdaHandler } from '../../shared/composition/lambda.ts';

export interface PollBackendsReport {
  readonly sweeps: number;
}

/** Time left for the last sweep to finish before Lambda's timeout. */
const SAFETY_MS = 10_000;

/**
 * Scheduled every minute: sweep the runs on backends that push no events
 * (ACI, Cloud Run, Kubernetes) every `poll_interval_seconds` until the
 * invocation's time is nearly up. Each invocation ends 10 s before its
 * 60 s timeout, so the next tick's sweeps do not overlap this one's.
 *
 * @example
 * await makePollBackends(deps)(event, context); // { sweeps: 16 }
 */
export function makePollBackends(
  deps: AppDeps,
): (
  event: ScheduledEvent | undefined,
  context: Pick<Context, 'getRemainingTimeInMillis'>,
) => Promise<PollBackendsReport> {
  const poller = new BackendPoller(deps, pollerOptionsFrom(deps.settings));
  return async (_event, context) => {
    if (!poller.hasWork) return { sweeps: 0 };
    const deadline = deps.clock.nowMs() + context.getRemainingTimeInMillis() - SAFETY_MS;
    return { sweeps: await poller.runUntil(deadline) };
  };
}

const polling = lambdaHandler(makePollBackends);
/** Read once per container: the environment does not change under a running function. */
let polls: boolean | undefined;

/** With no ACI, Cloud Run or Kubernetes runner configured there is nothing to poll, and no composition is built. */
export const handler: typeof polling = async (event, context) => {
  polls ??= pollsAnyBackend(process.env);
  return polls ? polling(event, context) : { sweeps: 0 };
};
