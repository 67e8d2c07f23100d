import { amend, deadlineOf, isTerminal, transition } from '../domain/run.ts';
import { encodeRunMessage } from '../domain/run-message.ts';
import { endOnBackend, endRun } from './credentials.ts';
import type { AppDeps } from './deps.ts';
import { pruneSlots } from './launch-cap.ts';
import { settleRun } from './run-updates.ts';

export interface ReconcileOptions {
  /** A queued run older than this without progress is enqueued again (the first send may have been lost). */
  readonly requeueAfterSeconds: number;
  /** Past its deadline by this much, a run whose runner has not settled it is timed out here. */
  readonly deadlineGraceSeconds: number;
}

export interface ReconcileReport {
  readonly requeued: readonly string[];
  readonly timedOut: readonly string[];
  /** Runs that had ended (or were gone) while still holding a launch-cap slot: their slots were let go. */
  readonly prunedSlots?: readonly string[];
}

/**
 * The safety net behind the happy path: re-enqueue queued runs whose message
 * was lost, and end runs that outlived their deadline when nobody else did —
 * asking the backend to stop and clean up first, and let go of launch-cap
 * slots still held by runs that ended (pruneSlots). Safe to run concurrently
 * with everything else: every change is a conditional write.
 */
export async function reconcileRuns(deps: AppDeps, options: ReconcileOptions): Promise<ReconcileReport> {
  const requeued: string[] = [];
  const timedOut: string[] = [];
  const nowMs = deps.clock.nowMs();
  const active = await deps.store.listActiveRuns(1000);
  for (const run of active) {
    const lastChange = Date.parse(run.updatedAt);
    const pastDeadline = nowMs > deadlineOf(run) + options.deadlineGraceSeconds * 1000;
    if (!pastDeadline) {
      if (run.state === 'queued' && nowMs - lastChange > options.requeueAfterSeconds * 1000) {
        // Touch the run first so the next sweep waits again instead of piling up copies.
        const touched = await settleRun(deps.store, run.id, (r) =>
          r.state === 'queued' ? amend(r, deps.clock.now(), {}) : r,
        );
        if (touched.state === 'queued') {
          await deps.dispatchQueue.send(encodeRunMessage(run.id));
          requeued.push(run.id);
        }
      }
      continue;
    }
    const handle = run.launch?.handle;
    const launcher = run.launch === undefined ? undefined : deps.launchers[run.launch.backend];
    if (handle !== undefined && launcher !== undefined) {
      await launcher.cancel(handle, run, 0).catch((error: unknown) => {
        deps.logger.warn('reconcile: backend cancel failed', { runId: run.id, error: error as Error });
      });
    }
    const settled = await endRun(deps, run.id, (r) =>
      transition(r, 'timed_out', deps.clock.now(), {
        reason: `No runner settled the run within its ${r.timeoutSeconds} s timeout (last state ${r.state})`,
      }),
    );
    if (settled.state === 'timed_out' && !isTerminal(run.state)) timedOut.push(run.id);
    if (handle !== undefined && launcher !== undefined) {
      await endOnBackend(deps, launcher, handle, run).catch(() => {});
    }
  }
  const prunedSlots = await pruneSlots(deps, new Set(active.map((r) => r.id)));
  if (requeued.length + timedOut.length + prunedSlots.length > 0) {
    deps.logger.warn('reconciled runs', { requeued, timedOut, prunedSlots });
  }
  return { requeued, timedOut, ...(prunedSlots.length === 0 ? {} : { prunedSlots }) };
}
