import { NotFoundError } from '../domain/errors.ts';
import { isTerminal, type Run } from '../domain/run.ts';
import type { CredentialBroker } from '../ports/credential-broker.ts';
import type { Launcher } from '../ports/launcher.ts';
import type { Logger } from '../ports/logger.ts';
import type { RunSecretStore } from '../ports/run-secret-store.ts';
import type { RunStore } from '../ports/run-store.ts';
import { releaseSlot, type SlotDeps } from './launch-cap.ts';
import { settleRun } from './run-updates.ts';

/** What letting go of a run's holdings needs; each part is optional where a mode may lack it. */
export interface ReleaseDeps extends SlotDeps {
  readonly credentials?: CredentialBroker | undefined;
  readonly runSecrets?: RunSecretStore | undefined;
  /** For the managed-account hold; absent, holds are left to be taken over (their holder has ended). */
  readonly store?: Pick<RunStore, 'releaseAccount'> | undefined;
  readonly logger?: Logger | undefined;
}

/**
 * Check in the run's just-in-time checkout, if it has one. Check-in is
 * idempotent, so being called from two places is harmless. A failure is
 * logged, not thrown: the checkout expires on its own after its duration,
 * and the caller's own work (cleanup, settling) must not be undone by it.
 *
 * @example
 * await releaseCredentials(deps, run);
 */
export async function releaseCredentials(
  deps: Pick<ReleaseDeps, 'credentials' | 'logger'>,
  run: Pick<Run, 'id' | 'credentialLease'>,
): Promise<void> {
  if (run.credentialLease === undefined) return;
  if (deps.credentials === undefined) {
    deps.logger?.warn('a run holds a credential checkout but no broker is configured to check it in', {
      runId: run.id,
    });
    return;
  }
  try {
    await deps.credentials.checkin(run.credentialLease);
    deps.logger?.info('checked in the run’s managed account', { runId: run.id });
  } catch (error) {
    deps.logger?.warn('credential check-in failed; the checkout expires on its own', {
      runId: run.id,
      error: error as Error,
    });
  }
}

/**
 * Let go of everything a run holds besides its record, in this order: check
 * in its checkout, release its managed-account hold (so the next run on the
 * account may start only once the account is back), its slot under its
 * backend's launch cap, then delete its per-run secrets. Idempotent, and it
 * never throws: each failure is logged, and whatever is left is taken over
 * (a hold whose run has ended), expires (a checkout), is pruned by the
 * reconciler (a slot) or is swept (local per-run secrets).
 *
 * @example
 * await releaseRun(deps, run);
 */
export async function releaseRun(
  deps: ReleaseDeps,
  run: Pick<Run, 'id' | 'credentialLease' | 'heldAccount' | 'ephemeralSecrets' | 'runner' | 'launch'>,
): Promise<void> {
  await releaseCredentials(deps, run);
  if (run.heldAccount !== undefined && deps.store !== undefined) {
    await deps.store.releaseAccount(run.heldAccount, run.id).catch((error: unknown) => {
      deps.logger?.warn('releasing the managed-account hold failed; the next run takes it over', {
        runId: run.id,
        error: error as Error,
      });
    });
  }
  await releaseSlot(deps, run);
  const keys = run.ephemeralSecrets ?? [];
  if (keys.length > 0) {
    if (deps.runSecrets === undefined) {
      deps.logger?.warn('a run holds per-run secrets but no per-run secret store is configured', {
        runId: run.id,
      });
      return;
    }
    await deps.runSecrets.deleteFor(run.id, keys).catch((error: unknown) => {
      deps.logger?.error('deleting the run’s per-run secrets failed', {
        runId: run.id,
        error: error as Error,
      });
    });
  }
}

/**
 * Settle a run the way `settleRun` does, but when `decide` ends it, release
 * what it holds first (releaseRun) and write the terminal state after: a
 * client that sees a run ended can rely on its account being checked in and
 * its per-run secrets gone. A crash in between leaves the run active, and
 * whoever settles it next (relay adoption, the status sync, the reconciler)
 * releases again — everything released is idempotent. A run `decide` does
 * not end is written as is.
 *
 * @example
 * await endRun(deps, run.id, (r) => transition(r, 'failed', clock.now(), { reason }));
 */
export async function endRun(
  deps: ReleaseDeps & { readonly store: RunStore },
  runId: string,
  decide: (run: Run) => Run,
): Promise<Run> {
  const current = await deps.store.getRun(runId);
  if (current === undefined) throw new NotFoundError(`No run with id ${runId}`);
  if (isTerminal(current.state)) return current;
  const ends = isTerminal(decide(current).state);
  if (ends) await releaseRun(deps, current);
  const after = await settleRun(deps.store, runId, decide, current);
  // Something was recorded between the read and the write (a checkout): let that go too.
  if (
    ends &&
    isTerminal(after.state) &&
    (after.credentialLease !== current.credentialLease || after.heldAccount !== current.heldAccount)
  ) {
    await releaseRun(deps, after);
  }
  return after;
}

/**
 * What follows a run's end on its backend: remove what the task left there.
 * What the run holds was released before its end was recorded (endRun), so
 * a cleanup that fails holds up no account. Cleanup errors reach the
 * caller, which decides whether to retry.
 */
export async function endOnBackend(
  _deps: ReleaseDeps,
  launcher: Launcher,
  handle: string,
  run: Run,
): Promise<void> {
  await launcher.cleanup(handle, run);
}
