import { unconfirmedHolders } from '../domain/launch-cap.ts';
import { isTerminal, type Run, type Runner } from '../domain/run.ts';
import type { LaunchGate } from '../ports/launch-budget.ts';
import type { Logger } from '../ports/logger.ts';
import type { RunStore } from '../ports/run-store.ts';

/** What letting go of a slot needs: the gate's slots and caps (absent: nothing is capped). */
export interface SlotDeps {
  readonly launchBudget?: Pick<LaunchGate, 'slots' | 'caps'> | undefined;
  readonly logger?: Logger | undefined;
}

/**
 * Hold a slot under the runner's launch cap for `run` before it launches.
 * True when the runner has no cap, or the run holds a slot (already, on a
 * redelivery, or now); false when the cap is full and the run must wait.
 *
 * @example
 * if (!(await holdSlot(deps, run, 'gcp'))) return wait();
 */
export async function holdSlot(
  deps: Pick<SlotDeps, 'launchBudget'>,
  run: Pick<Run, 'id'>,
  runner: Runner,
): Promise<boolean> {
  const slots = deps.launchBudget?.slots;
  const cap = deps.launchBudget?.caps?.[runner];
  if (slots === undefined || cap === undefined) return true;
  return slots.acquire(cap.key, cap.cap, run.id);
}

/**
 * Let go of the slot a run holds under its backend's cap. Which scope it is
 * follows from the backend the run was launched on (the slot store is
 * idempotent on the run id, so a run that never held one costs one no-op
 * write and no run record needs a field for it). Never throws: a slot left
 * behind is pruned by the reconciler (pruneSlots).
 *
 * @example
 * await releaseSlot(deps, run);
 */
export async function releaseSlot(deps: SlotDeps, run: Pick<Run, 'id' | 'runner' | 'launch'>): Promise<void> {
  const backend = run.launch?.backend ?? run.runner;
  const slots = deps.launchBudget?.slots;
  const cap = backend === undefined ? undefined : deps.launchBudget?.caps?.[backend];
  if (slots === undefined || cap === undefined) return;
  await slots.release(cap.key, run.id).catch((error: unknown) => {
    deps.logger?.warn('releasing the run’s launch slot failed; the reconciler prunes it', {
      runId: run.id,
      error: error as Error,
    });
  });
}

/**
 * Let go of slots held by runs that have ended or no longer exist (a crash
 * between a run's end and its release), so a slot never leaks for good.
 * `active` are the ids of runs just listed as active: only the other holders
 * are read, and each is released only once its record confirms it ended.
 * Answers the run ids whose slots were pruned.
 *
 * @example
 * const pruned = await pruneSlots(deps, new Set(activeRuns.map((r) => r.id)));
 */
export async function pruneSlots(
  deps: Pick<SlotDeps, 'launchBudget'> & { readonly store: Pick<RunStore, 'getRun'> },
  active: ReadonlySet<string>,
): Promise<readonly string[]> {
  const slots = deps.launchBudget?.slots;
  if (slots === undefined) return [];
  const pruned: string[] = [];
  const scopes = new Set(Object.values(deps.launchBudget?.caps ?? {}).map((c) => c.key));
  for (const scope of scopes) {
    for (const runId of unconfirmedHolders(await slots.holders(scope), active)) {
      const run = await deps.store.getRun(runId);
      if (run !== undefined && !isTerminal(run.state)) continue;
      await slots.release(scope, runId);
      pruned.push(runId);
    }
  }
  return pruned;
}
