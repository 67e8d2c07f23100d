import { managedAccountOf } from '../domain/checkout.ts';
import { DomainError } from '../domain/errors.ts';
import { amend, isRelayOwner, isTerminal, type Run, transition } from '../domain/run.ts';
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
 * claim with one conditional write that returns the run and records the
 * launch intent (RunStore.claimRun: no read before it), re-check cancel and
 * the runner plan, then launch with the backend's idempotency (on a
 * redelivery the launcher adopts what an earlier attempt created). Retryable
 * backend errors are thrown so the message comes back; permanent ones settle
 * the run.
 */
export async function dispatchRun(deps: AppDeps, runId: string, owner: string): Promise<DispatchOutcome> {
  const now = () => deps.clock.now();
  const log = deps.logger;
  const claim = await deps.store.claimRun(runId, { owner, at: now() });
  if (claim === undefined) {
    log.warn('dispatch: no such run; dropping the message', { runId });
    return 'skipped';
  }
  let run = claim.run;
  // A run still `dispatching` is a redelivery after a crash or a retryable failure: take it
  // over but keep the attempt, so the launch key stays the same.
  const redelivery = !claim.claimed;
  if (redelivery) {
    if (run.state !== 'dispatching') return 'skipped'; // already launched or finished: a duplicate delivery
    run = await settleRun(
      deps.store,
      runId,
      (r) => (r.state === 'dispatching' ? amend(r, now(), { owner }) : r),
      run,
    );
    if (run.state !== 'dispatching' || run.owner !== owner) return 'skipped';
  }

  const selected = run.targetId === undefined ? undefined : await lookupTarget(deps, run.targetId);
  const account = managedAccountOf(run, selected);
  if (account !== undefined) {
    const held = await holdAccount(deps, run, account);
    if (held === undefined) return 'deferred';
    run = held;
    if (run.state !== 'dispatching' || run.owner !== owner) {
      // Held for a run that ended meanwhile (a cancel): give the account back now rather than at takeover.
      if (isTerminal(run.state)) await deps.store.releaseAccount(account, runId);
      return 'skipped';
    }
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

  if (run.launch?.backend !== plan.runner || run.runner !== plan.runner || run.image !== plan.image) {
    // The claim recorded the runner chosen at submit; the settings now choose another.
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
      launcher.launch({ run, image: plan.image, redelivery, known: { target } }),
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
  // A relay may claim and finish a run before this write (it does not wait for it); it released what it held.
  if (isTerminal(launched.state) && launched.launch?.handle !== handle && !isRelayOwner(launched.owner)) {
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
 * Take the run's managed account, or put the claimed run back in the queue
 * for later: answers the run (with `heldAccount` recorded) when it holds the
 * account, undefined when it waits. A holder that has ended (or no longer
 * exists) is taken over — its release was lost to a crash. Otherwise the
 * claim is undone (the run is `queued` again, as before the claim, but
 * touched so the reconciler does not enqueue a second copy) and the run is
 * offered again after ACCOUNT_WAIT_SECONDS with a message of its own, which
 * never counts towards the dead-letter limit.
 */
async function holdAccount(deps: AppDeps, run: Run, account: string): Promise<Run | undefined> {
  let holder = await deps.store.holdAccount(account, run.id);
  if (holder !== run.id) {
    const other = await deps.store.getRun(holder);
    if (other === undefined || isTerminal(other.state)) {
      holder = await deps.store.holdAccount(account, run.id, { replacing: holder });
    }
  }
  const at = deps.clock.now();
  if (holder === run.id) {
    if (run.heldAccount === account) return run;
    return settleRun(
      deps.store,
      run.id,
      (r) => (r.state === 'dispatching' ? amend(r, at, { heldAccount: account }) : r),
      run,
    );
  }
  const waiting = await settleRun(
    deps.store,
    run.id,
    (r) => (r.state === 'dispatching' && r.owner === run.owner ? unclaimed(r, at) : r),
    run,
  );
  if (waiting.state === 'queued') {
    await deps.dispatchQueue.send(encodeRunMessage(run.id), { delaySeconds: ACCOUNT_WAIT_SECONDS });
  }
  deps.logger.info('dispatch: managed account in use; the run waits', { runId: run.id, account, holder });
  return undefined;
}

/**
 * The claim undone: queued again on the attempt it had, without the claim's
 * history entry, owner or launch intent, so a run waiting for an account does
 * not grow its record every ACCOUNT_WAIT_SECONDS.
 */
function unclaimed(run: Run, at: string): Run {
  const { owner: _owner, launch: _launch, ...rest } = run;
  const last = run.history.at(-1);
  return {
    ...rest,
    state: 'queued',
    attempt: Math.max(0, run.attempt - 1),
    history: last?.state === 'dispatching' ? run.history.slice(0, -1) : run.history,
    version: run.version + 1,
    updatedAt: at,
  };
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
