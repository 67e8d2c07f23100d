import { managedAccountOf } from '../domain/checkout.ts';
import { DomainError } from '../domain/errors.ts';
import { amend, isTerminal, type Run, transition } from '../domain/run.ts';
import { encodeRunMessage } from '../domain/run-message.ts';
import type { Target } from '../domain/target.ts';
import { endOnBackend, endRun, releaseRun } from './credentials.ts';
import type { AppDeps } from './deps.ts';
import { launchWithinBudget } from './launch-budget.ts';
import { settleRun } from './run-updates.ts';
import { planRun } from './runs.ts';
import { lookupTarget } from './target-lookup.ts';

/**
 * `deferred`: the run's managed account is held by another run, or its backend's launch budget is spent;
 * it waits and is offered again later.
 */
export type DispatchOutcome = 'launched' | 'skipped' | 'settled' | 'deferred';

/** How long a run waits before asking again for a managed account another run holds. */
export const ACCOUNT_WAIT_SECONDS = 5;

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

  const selected = existing.targetId === undefined ? undefined : await lookupTarget(deps, existing.targetId);
  const account = managedAccountOf(existing, selected);
  if (account !== undefined && !(await holdAccount(deps, existing, account))) return 'deferred';

  // Claim. A run still `dispatching` is a redelivery after a crash or a retryable
  // failure: take it over but keep the attempt, so the launch key stays the same.
  const held = account === undefined ? {} : { heldAccount: account };
  let run = await settleRun(
    deps.store,
    runId,
    (r) => {
      if (r.state === 'queued')
        return transition(r, 'dispatching', now(), { patch: { owner, attempt: r.attempt + 1, ...held } });
      if (r.state === 'dispatching') return amend(r, now(), { owner, ...held });
      return r;
    },
    existing,
  );
  if (run.state !== 'dispatching' || run.owner !== owner) {
    // Held for a run that ended meanwhile (a cancel): give the account back now rather than at takeover.
    if (account !== undefined && isTerminal(run.state)) await deps.store.releaseAccount(account, runId);
    return 'skipped';
  }

  if (run.cancelRequested) {
    await endRun(deps, runId, (r) =>
      transition(r, 'cancelled', now(), { reason: 'Cancelled before launch' }),
    );
    return 'settled';
  }

  const target: Target | undefined = selected;
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
    // Within the backend's launch budget; a spent budget or a throttled launch leaves the run waiting.
    const within = await launchWithinBudget(deps, run, plan.runner, () =>
      launcher.launch({ run, image: plan.image }),
    );
    if (within === undefined) return 'deferred';
    handle = within;
  } catch (error) {
    if (error instanceof DomainError && !error.retryable) {
      await endRun(deps, runId, (r) =>
        transition(r, 'failed', now(), {
          reason: `The ${plan.runner} backend rejected the launch: ${error.message}`,
        }),
      );
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
    try {
      await endOnBackend(deps, launcher, handle, launched);
    } finally {
      // Whoever settled it released what it held then; a checkout this launch recorded since is let go here.
      await releaseRun(deps, launched);
    }
    return 'settled';
  }
  if (launched.cancelRequested && !isTerminal(launched.state)) {
    await launcher.cancel(handle, launched, 30);
  }
  log.info('dispatched', { runId, runner: plan.runner, handle });
  return 'launched';
}

/**
 * Take the run's managed account, or leave the run queued for later: true
 * when the run holds the account. A holder that has ended (or no longer
 * exists) is taken over — its release was lost to a crash. Otherwise the
 * run is touched (so the reconciler does not enqueue a second copy) and
 * offered again after ACCOUNT_WAIT_SECONDS with a message of its own, which
 * never counts towards the dead-letter limit.
 */
async function holdAccount(deps: AppDeps, run: Run, account: string): Promise<boolean> {
  let holder = await deps.store.holdAccount(account, run.id);
  if (holder !== run.id) {
    const other = await deps.store.getRun(holder);
    if (other === undefined || isTerminal(other.state)) {
      holder = await deps.store.holdAccount(account, run.id, { replacing: holder });
    }
  }
  if (holder === run.id) return true;
  const touched = await settleRun(deps.store, run.id, (r) =>
    r.state === 'queued' ? amend(r, deps.clock.now(), {}) : r,
  );
  if (touched.state === 'queued') {
    await deps.dispatchQueue.send(encodeRunMessage(run.id), { delaySeconds: ACCOUNT_WAIT_SECONDS });
  }
  deps.logger.info('dispatch: managed account in use; the run waits', { runId: run.id, account, holder });
  return false;
}

async function refuse(deps: AppDeps, run: Run, reason: string): Promise<void> {
  await endRun(deps, run.id, (r) => transition(r, 'refused', deps.clock.now(), { reason }));
  deps.logger.info('dispatch refused', { runId: run.id, reason });
}

/** A message that exhausted its receives: its run fails with the reason instead of waiting forever. */
export async function settleDeadLetter(deps: AppDeps, runId: string, receiveCount: number): Promise<void> {
  const run = await deps.store.getRun(runId);
  if (run === undefined || isTerminal(run.state)) return;
  await endRun(deps, runId, (r) =>
    transition(r, 'failed', deps.clock.now(), {
      reason: `Delivery failed ${receiveCount} times in a row; the message was moved to the dead-letter queue (see the service log for each error)`,
    }),
  );
  deps.logger.error('run failed from the dead-letter queue', { runId, receiveCount });
}
