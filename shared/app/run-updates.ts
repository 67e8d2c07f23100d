import { NotFoundError, RunConflictError } from '../domain/errors.ts';
import { isTerminal, type Run } from '../domain/run.ts';
import type { RunStore } from '../ports/run-store.ts';

const MAX_ATTEMPTS = 8;

/**
 * Read-modify-write with the store's version check, retried when someone else
 * wrote first. `change` returns the same object to leave the run alone
 * (e.g. it is already terminal), so callers never fight over a finished run.
 *
 * @example
 * await mutateRun(store, id, (run) => requestCancel(run, clock.now()));
 */
export async function mutateRun(store: RunStore, id: string, change: (run: Run) => Run): Promise<Run> {
  for (let attempt = 1; ; attempt++) {
    const current = await store.getRun(id);
    if (current === undefined) throw new NotFoundError(`No run with id ${id}`);
    const next = change(current);
    if (next === current) return current;
    try {
      return await store.updateRun(next, current.version);
    } catch (error) {
      if (!(error instanceof RunConflictError) || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
}

/** Like mutateRun, but a run that is already terminal is returned untouched. */
export function settleRun(store: RunStore, id: string, change: (run: Run) => Run): Promise<Run> {
  return mutateRun(store, id, (run) => (isTerminal(run.state) ? run : change(run)));
}
