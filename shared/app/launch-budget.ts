import { type Budget, budgetWaitReason, isThrottling } from '../domain/launch-budget.ts';
import { capWaitReason } from '../domain/launch-cap.ts';
import { amend, type Run, type Runner } from '../domain/run.ts';
import { encodeRunMessage } from '../domain/run-message.ts';
import type { AppDeps } from './deps.ts';
import { holdSlot } from './launch-cap.ts';
import { settleRun } from './run-updates.ts';

/** SQS's longest message delay. */
const MAX_DELAY_SECONDS = 900;
/** After a backend throttled a launch without a budget of ours to say when: wait about this long. */
const THROTTLED_WAIT_MS = 1000;
const THROTTLED_SPREAD_SECONDS = 5;
/** A run beyond a launch cap asks for a slot again after about this long (LaunchGate.capWaitSeconds). */
const CAP_WAIT_SECONDS = 10;

/**
 * Launch within the backend's budget. Takes a token first; with none left, or
 * when the backend throttles the launch all the same (ECS ThrottlingException,
 * a 429), the run stays `dispatching` (same attempt, so the launch key does not
 * change and an earlier launch is still adopted) with the reason `waiting: ECS
 * launch budget`, and is offered again when its token is due (its place in
 * the line of waiting runs) by a new delayed message, which never counts
 * towards the dead-letter limit. A throttled launch waits about a second,
 * spread over the bucket's refill time.
 *
 * A backend with a launch cap (what runs at once: Cloud Run executions,
 * Kubernetes pods) first needs a slot for the run; with the cap full the run
 * waits the same way (`waiting: Cloud Run running executions`), asking again
 * after `capWaitSeconds` (spread over as long again), and takes no token
 * while it waits. The slot is held until the run ends (releaseRun). Returns
 * the handle, or undefined when the run waits (dispatchRun answers
 * `deferred`). Any other launch error is the caller's, as before.
 *
 * @example
 * const handle = await launchWithinBudget(deps, run, 'ecs', () => launcher.launch({ run, image }));
 * if (handle === undefined) return 'deferred';
 */
export async function launchWithinBudget(
  deps: AppDeps,
  run: Run,
  runner: Runner,
  launch: () => Promise<string>,
): Promise<string | undefined> {
  const gate = deps.launchBudget;
  const scope = gate?.scopes[runner];
  if (!(await holdSlot(deps, run, runner))) {
    const wait = gate?.capWaitSeconds ?? CAP_WAIT_SECONDS;
    await waitForBudget(deps, run, capWaitReason(runner), wait * 1000, wait);
    return undefined;
  }
  if (gate !== undefined && scope !== undefined) {
    const take = await gate.store.take(scope.key, scope.budget, deps.clock.nowMs());
    if (!take.granted) {
      // The store placed the run in the line of waiting runs: no spread needed.
      await waitForBudget(deps, run, budgetWaitReason(runner), take.retryAfterMs, 0);
      return undefined;
    }
  }
  try {
    return await launch();
  } catch (error) {
    if (!isThrottling(error)) throw error;
    deps.logger.warn('dispatch: the backend throttled the launch; the run waits', {
      runId: run.id,
      runner,
      error: error as Error,
    });
    const spread = scope === undefined ? THROTTLED_SPREAD_SECONDS : spreadSeconds(scope.budget);
    await waitForBudget(deps, run, budgetWaitReason(runner), THROTTLED_WAIT_MS, spread);
    return undefined;
  }
}

/** Time for an empty bucket to fill: the window waiting runs are spread over. */
const spreadSeconds = (b: Budget): number => Math.min(60, b.burst / b.perSecond);

async function waitForBudget(
  deps: AppDeps,
  run: Run,
  reason: string,
  retryAfterMs: number,
  spread: number,
): Promise<void> {
  if (run.reason !== reason) {
    const waiting = await settleRun(
      deps.store,
      run.id,
      (r) => (r.state === 'dispatching' ? { ...amend(r, deps.clock.now(), {}), reason } : r),
      run,
    );
    // Settled meanwhile (a cancel, the reconciler): nothing left to offer again.
    if (waiting.state !== 'dispatching') return;
  }
  const random = deps.launchBudget?.random ?? Math.random;
  const delaySeconds = Math.min(
    MAX_DELAY_SECONDS,
    Math.max(1, Math.ceil(retryAfterMs / 1000 + random() * spread)),
  );
  await deps.dispatchQueue.send(encodeRunMessage(run.id), { delaySeconds });
  deps.logger.info('dispatch: the run waits for its launch budget or cap', {
    runId: run.id,
    reason,
    delaySeconds,
  });
}
