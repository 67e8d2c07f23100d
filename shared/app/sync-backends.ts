import {
  isTerminal,
  type LaunchRecord,
  noteStatusUnknown,
  type Run,
  type Runner,
  type RunState,
  transition,
} from '../domain/run.ts';
import type { BackendStatus } from '../ports/launcher.ts';
import type { RunAdvance } from '../ports/run-store.ts';
import { endOnBackend, endRun } from './credentials.ts';
import type { AppDeps } from './deps.ts';

/** How far along a run is; a backend observation may only move it to a higher rank. */
const RANK: Record<RunState, number> = {
  queued: 0,
  dispatching: 1,
  launched: 2,
  running: 3,
  succeeded: 4,
  failed: 4,
  cancelled: 4,
  timed_out: 4,
  refused: 4,
};

const capitalise = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);

/**
 * Fold one observation of the backend task into the run — the one rule the
 * ECS event handler and the sweep below share. Returns the same object when
 * there is nothing to do, so `settleRun` writes nothing: a late or repeated
 * observation never moves a run backwards, and a terminal run never changes.
 * `launch` replaces the run's launch record on any move (it adopts the task
 * when the dispatcher died before recording it).
 *
 * @example
 * await settleRun(store, run.id, (r) => applyBackendStatus(r, { state: 'running' }, clock.now()));
 */
export function applyBackendStatus(
  run: Run,
  status: BackendStatus,
  at: string,
  launch: LaunchRecord | undefined = run.launch,
): Run {
  if (isTerminal(run.state) || run.state === 'queued') return run;
  const patch = launch === undefined ? {} : { patch: { launch } };
  // dispatching → running/succeeded is not a move the state machine allows: pass through launched.
  const launched = (r: Run): Run => (r.state === 'dispatching' ? transition(r, 'launched', at, patch) : r);

  switch (status.state) {
    case 'self_reporting':
      return run;
    case 'pending':
      return RANK[run.state] < RANK.launched ? launched(run) : run;
    case 'running':
      return RANK[run.state] < RANK.running ? transition(launched(run), 'running', at, patch) : run;
    case 'exited': {
      const end = exitEnd(status, run.cancelRequested);
      const exit = status.exitCode === undefined ? {} : { exitCode: status.exitCode };
      return transition(launched(run), end.state, at, {
        ...(end.reason === undefined ? {} : { reason: end.reason }),
        patch: { ...patch.patch, ...exit },
      });
    }
    case 'missing':
      return run.cancelRequested
        ? transition(run, 'cancelled', at, { reason: `Cancelled; ${status.reason}` })
        : transition(run, 'failed', at, { reason: capitalise(status.reason) });
  }
}

type Exit = Extract<BackendStatus, { state: 'exited' }>;

/** How a task's exit ends its run, and why: the rule applyBackendStatus and backendAdvance share. */
function exitEnd(status: Exit, cancelRequested: boolean): { state: RunState; reason?: string } {
  const succeeded = status.exitCode === 0 && status.reason === undefined;
  if (cancelRequested && !succeeded) return { state: 'cancelled', reason: 'Cancelled; the task was stopped' };
  if (succeeded) return { state: 'succeeded' };
  const reason =
    status.reason ??
    (status.exitCode === undefined
      ? 'The task ended without an exit code'
      : `The task exited with code ${status.exitCode}`);
  return { state: 'failed', reason: capitalise(reason) };
}

/**
 * An observation that moves a launched run forward, as the blind advance
 * RunStore.advanceRun writes (one conditional write, no read): the same move
 * applyBackendStatus makes of a run with no cancel request (advanceRun only
 * applies to such a run). Undefined for an observation that moves no
 * launched run (pending, self-reporting, missing): the caller reads.
 *
 * @example
 * backendAdvance({ state: 'running' }); // { from: ['launched'], to: 'running' }
 */
export function backendAdvance(
  status: BackendStatus,
): Pick<RunAdvance, 'from' | 'to' | 'reason' | 'exitCode'> | undefined {
  if (status.state === 'running') return { from: ['launched'], to: 'running' };
  if (status.state !== 'exited') return undefined;
  const end = exitEnd(status, false);
  return {
    from: ['launched', 'running'],
    to: end.state,
    ...(end.reason === undefined ? {} : { reason: end.reason }),
    ...(status.exitCode === undefined ? {} : { exitCode: status.exitCode }),
  };
}

export interface SyncBackendsOptions {
  /** Ask the backend about a run only when its record has not changed for this long (events keep fresh runs current). */
  readonly staleAfterSeconds: number;
  /** A task the backend does not know yet may be eventual consistency: fail it as missing only after this long. */
  readonly missingGraceSeconds: number;
  /** Passed to `cancel` for runs with a cancel request. */
  readonly cancelGraceSeconds?: number;
  /**
   * A cancel the backend has not confirmed this long after it was requested is
   * recorded as unconfirmed: the run fails with that reason (default 300 s).
   */
  readonly cancelConfirmSeconds?: number;
  /** At most this many runs per sweep. */
  readonly limit?: number;
  /** Only runs launched on these backends (default: all). */
  readonly backends?: readonly Runner[];
  /** Leave these runs alone this sweep (the poller's backoff). */
  readonly skip?: (runId: string) => boolean;
  /**
   * When set, a backend that fails to answer (errors, throttling) is recorded
   * on the run (`statusUnknownSince`), and after this long without an answer
   * the run fails with the last error. Unset, failures are only logged.
   */
  readonly statusUnknownGraceSeconds?: number;
}

export interface SyncBackendsReport {
  /** Runs moved forward but not finished (adopted or found running). */
  readonly advanced: readonly string[];
  /** Runs settled terminal from what the backend said. */
  readonly settled: readonly string[];
  /** Runs whose backend task was asked to stop because of a cancel request. */
  readonly stopped: readonly string[];
  /** Runs whose backend answered about their task. */
  readonly observed: readonly string[];
  /** Runs whose backend could not be asked (error or throttling). */
  readonly unknown: readonly string[];
}

const SYNCED_STATES: ReadonlySet<RunState> = new Set(['dispatching', 'launched', 'running']);

/**
 * The polling half of the status sync, behind the ECS events: for runs in
 * `dispatching`/`launched`/`running` that carry a backend handle, ask the
 * launcher and settle the run — adopt a running task, settle an exited one
 * with its exit code and reason, fail one the backend no longer knows. It also
 * forwards cancel requests to the backend (the API only sets the flag). Every
 * write is conditional (settleRun), so it is safe beside the event handler.
 *
 * @example
 * const report = await syncBackends(deps, { staleAfterSeconds: 60, missingGraceSeconds: 120 });
 */
export async function syncBackends(
  deps: Pick<AppDeps, 'store' | 'launchers' | 'clock' | 'logger' | 'credentials' | 'runSecrets'>,
  options: SyncBackendsOptions,
): Promise<SyncBackendsReport> {
  const advanced: string[] = [];
  const settled: string[] = [];
  const stopped: string[] = [];
  const observed: string[] = [];
  const unknown: string[] = [];
  const nowMs = deps.clock.nowMs();
  for (const run of await deps.store.listActiveRuns(options.limit ?? 1000)) {
    const handle = run.launch?.handle;
    const backend = run.launch?.backend;
    const launcher = backend === undefined ? undefined : deps.launchers[backend];
    if (!SYNCED_STATES.has(run.state) || handle === undefined || launcher === undefined) continue;
    if (options.backends !== undefined && !options.backends.includes(launcher.backend)) continue;
    if (options.skip?.(run.id) === true) continue;
    const quietMs = nowMs - Date.parse(run.updatedAt);
    if (!run.cancelRequested && quietMs < options.staleAfterSeconds * 1000) continue;

    let status: BackendStatus;
    try {
      status = await launcher.status(handle, run);
    } catch (error) {
      unknown.push(run.id);
      deps.logger.warn('sync: backend status failed', { runId: run.id, error: error as Error });
      if (options.statusUnknownGraceSeconds !== undefined) {
        const failed = await recordUnknown(deps, run, handle, error, options.statusUnknownGraceSeconds);
        if (failed !== undefined) {
          settled.push(run.id);
          await endOnBackend(deps, launcher, handle, failed).catch((cleanupError: unknown) => {
            deps.logger.warn('sync: backend cleanup failed', { runId: run.id, error: cleanupError as Error });
          });
        }
      }
      continue;
    }
    observed.push(run.id);
    if (status.state === 'self_reporting') continue;
    // A task gone after a cancel request is the cancel done (ACI and Kubernetes delete on cancel).
    if (status.state === 'missing' && !run.cancelRequested && quietMs < options.missingGraceSeconds * 1000)
      continue;

    if (run.cancelRequested && (status.state === 'pending' || status.state === 'running')) {
      try {
        await launcher.cancel(handle, run, options.cancelGraceSeconds ?? 30);
        stopped.push(run.id);
      } catch (error) {
        deps.logger.warn('sync: backend cancel failed', { runId: run.id, error: error as Error });
      }
    }

    const confirmMs = (options.cancelConfirmSeconds ?? 300) * 1000;
    const askedAt = run.cancelRequestedAt === undefined ? undefined : Date.parse(run.cancelRequestedAt);
    const unconfirmed =
      run.cancelRequested &&
      (status.state === 'pending' || status.state === 'running') &&
      askedAt !== undefined &&
      nowMs - askedAt > confirmMs;

    let changed = false;
    // endRun: an ended task's account is checked in (and its per-run secrets deleted) before its end is recorded.
    const after = await endRun(deps, run.id, (r) => {
      if (unconfirmed && r.launch?.handle === handle) {
        changed = true;
        return transition(r, 'failed', deps.clock.now(), {
          reason: `Cancel requested at ${r.cancelRequestedAt} was not confirmed by the ${r.launch.backend} backend within ${confirmMs / 1000} s; the task may still be running (${handle})`,
        });
      }
      // The handle moved on (a new attempt) since the status was asked: the answer is about another task.
      if (r.launch?.handle !== handle) return r;
      const next = applyBackendStatus(
        noteStatusUnknown(r, deps.clock.now(), false),
        status,
        deps.clock.now(),
      );
      changed = next !== r;
      return next;
    });
    if (!changed) continue;
    if (isTerminal(after.state)) {
      settled.push(run.id);
      await endOnBackend(deps, launcher, handle, after).catch((error: unknown) => {
        deps.logger.warn('sync: backend cleanup failed', { runId: run.id, error: error as Error });
      });
    } else {
      advanced.push(run.id);
    }
  }
  if (advanced.length + settled.length + stopped.length > 0) {
    deps.logger.info('synced runs with their backends', { advanced, settled, stopped });
  }
  return { advanced, settled, stopped, observed, unknown };
}

/**
 * A backend that did not answer: note when the silence began and, once it has
 * lasted `graceSeconds`, fail the run with the last error. Returns the failed
 * run, or undefined while the grace lasts.
 */
async function recordUnknown(
  deps: Pick<AppDeps, 'store' | 'clock' | 'logger' | 'credentials' | 'runSecrets'>,
  run: Run,
  handle: string,
  error: unknown,
  graceSeconds: number,
): Promise<Run | undefined> {
  const said = error instanceof Error ? error.message : String(error);
  let failed = false;
  const after = await endRun(deps, run.id, (r) => {
    if (r.launch?.handle !== handle || isTerminal(r.state)) return r;
    const now = deps.clock.now();
    const since = r.statusUnknownSince;
    if (since === undefined || deps.clock.nowMs() - Date.parse(since) < graceSeconds * 1000) {
      return noteStatusUnknown(r, now, true);
    }
    failed = true;
    return transition(r, 'failed', now, {
      reason:
        `The ${r.launch.backend} backend has not reported on the task since ${since} (more than ${graceSeconds} s); last error: ${said}`.slice(
          0,
          1000,
        ),
    });
  });
  return failed ? after : undefined;
}
