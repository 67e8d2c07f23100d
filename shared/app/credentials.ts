import type { Logger } from '@aws-lambda-powertools/logger';
import type { Run } from '../domain/run.ts';
import type { CredentialBroker } from '../ports/credential-broker.ts';
import type { Launcher } from '../ports/launcher.ts';

/**
 * Check in the run's just-in-time checkout, if it has one. Called wherever a
 * run's end is handled (backend cleanup, a rejected launch, the dead-letter
 * queue, the relay settling its run); check-in is idempotent, so being called
 * from two of them is harmless. A failure is logged, not thrown: the
 * checkout expires on its own after its duration, and the caller's own work
 * (cleanup, settling) must not be undone by it.
 *
 * @example
 * await releaseCredentials(deps, settledRun);
 */
export async function releaseCredentials(
  deps: { readonly credentials?: CredentialBroker | undefined; readonly logger: Logger },
  run: Pick<Run, 'id' | 'credentialLease'>,
): Promise<void> {
  if (run.credentialLease === undefined) return;
  if (deps.credentials === undefined) {
    deps.logger.warn('a run holds a credential checkout but no broker is configured to check it in', {
      runId: run.id,
    });
    return;
  }
  try {
    await deps.credentials.checkin(run.credentialLease);
    deps.logger.info('checked in the run’s managed account', { runId: run.id });
  } catch (error) {
    deps.logger.warn('credential check-in failed; the checkout expires on its own', {
      runId: run.id,
      error: error as Error,
    });
  }
}

/**
 * What follows a run's end on its backend: remove what the task left there,
 * then check in its credentials (also when the cleanup failed). Cleanup
 * errors still reach the caller, which decides whether to retry.
 */
export async function endOnBackend(
  deps: { readonly credentials?: CredentialBroker | undefined; readonly logger: Logger },
  launcher: Launcher,
  handle: string,
  run: Run,
): Promise<void> {
  try {
    await launcher.cleanup(handle, run);
  } finally {
    await releaseCredentials(deps, run);
  }
}
