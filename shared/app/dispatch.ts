import { DomainError } from '../domain/errors.ts';
import { amend, isTerminal, type Run, transition } from '../domain/run.ts';
import { endOnBackend, releaseCredentials } from './credentials.ts';
import type { AppDeps } from './deps.ts';
import { settleRun } from './run-updates.ts';
import { planRun } from './runs.ts';

export type DispatchOutcome = 'launched' | 'skipped' | 'settled';

/**
 * Take one run from `queued` to `launched`, safely under redelivery:
 * claim with a conditional write, re-check cancel and the runner plan,
 * record the launch intent, then launch with the backend's idempotency
 * (the launcher adopts what an earlier attempt created). Retryable backend
 * errors are thrown so the message comes back; permanent ones settle the run.
 */
export async function dispatchRun(deps: AppDeps, runId: string, owner: string): Promise<DispatchOutcome> {
  const now = () => deps.clock.now();
  const log = deps.logger;
  const existing = await deps.store.getRun(runId);
  if (existing === undefined) {
    log.warn('dispatch: no such run; dropping the message', { runId });
    return 'skipped';
  }
  if (existing.state !== 'queued' && existing.state !== 'dispatching') {
    return 'skipped'; // already launched or finished: a duplicate delivery
  }

  // Claim. A run still `dispatching` is a redelivery after a crash or a retryable
  // failure: take it over but keep the attempt, so the launch key stays the same.
  let run = await settleRun(
    deps.store,
    runId,
    (r) => {
      if (r.state === 'queued')
        return transition(r, 'dispatching', now(), { patch: { owner, attempt: r.attempt + 1 } });
      if (r.state === 'dispatching') return amend(r, now(), { owner });
      return r;
    },
    existing,
  );
  if (run.state !== 'dispatching' || run.owner !== owner) return 'skipped';

  if (run.cancelRequested) {
    await settleRun(deps.store, runId, (r) =>
      transition(r, 'cancelled', now(), { reason: 'Cancelled before launch' }),
    );
    return 'settled';
  }

  const target = run.targetId === undefined ? undefined : await deps.store.getTarget(run.targetId);
  if (run.targetId !== undefined && target === undefined) {
    await refuse(deps, run, `Target ${run.targetId} was deleted before the run started`);
    return 'settled';
  }
  const plan = planRun(deps, run, target);
  if (!plan.ok) {
    await refuse(deps, run, plan.reason);
    return 'settled';
  }
  const launcher = deps.launchers[plan.runner];
  if (launcher === undefined) throw new Error(`planRun returned ${plan.runner} without a launcher`);

  if (run.launch?.backend !== plan.runner) {
    run = await settleRun(
      deps.store,
      runId,
      (r) =>
        r.state === 'dispatching'
          ? amend(r, now(), {
              runner: plan.runner,
              image: plan.image,
              launch: { backend: plan.runner, intentAt: now() },
            })
          : r,
      run,
    );
    if (run.state !== 'dispatching') return 'skipped';
  }

  let handle: string;
  try {
    handle = await launcher.launch({ run, image: plan.image });
  } catch (error) {
    if (error instanceof DomainError && !error.retryable) {
      const failed = await settleRun(deps.store, runId, (r) =>
        transition(r, 'failed', now(), {
          reason: `The ${plan.runner} backend rejected the launch: ${error.message}`,
        }),
      );
      await releaseCredentials(deps, failed);
      return 'settled';
    }
    throw error;
  }

  const launched = await settleRun(
    deps.store,
    runId,
    (r) =>
      r.state === 'dispatching'
        ? transition(r, 'launched', now(), {
            patch: { launch: { backend: plan.runner, intentAt: r.launch?.intentAt ?? now(), handle } },
          })
        : r,
    run,
  );
  if (isTerminal(launched.state) && launched.launch?.handle !== handle) {
    // Settled while we were launching: the task just started has no run left to report to.
    await launcher.cancel(handle, launched, 0);
    await endOnBackend(deps, launcher, handle, launched);
    return 'settled';
  }
  if (launched.cancelRequested && !isTerminal(launched.state)) {
    await launcher.cancel(handle, launched, 30);
  }
  log.info('dispatched', { runId, runner: plan.runner, handle });
  return 'launched';
}

async function refuse(deps: AppDeps, run: Run, reason: string): Promise<void> {
  await settleRun(deps.store, run.id, (r) => transition(r, 'refused', deps.clock.now(), { reason }));
  deps.logger.info('dispatch refused', { runId: run.id, reason });
}

/** A message that exhausted its receives: its run fails with the reason instead of waiting forever. */
export async function settleDeadLetter(deps: AppDeps, runId: string, receiveCount: number): Promise<void> {
  const run = await deps.store.getRun(runId);
  if (run === undefined || isTerminal(run.state)) return;
  const failed = await settleRun(deps.store, runId, (r) =>
    transition(r, 'failed', deps.clock.now(), {
      reason: `Delivery failed ${receiveCount} times in a row; the message was moved to the dead-letter queue (see the service log for each error)`,
    }),
  );
  await releaseCredentials(deps, failed);
  deps.logger.error('run failed from the dead-letter queue', { runId, receiveCount });
}
