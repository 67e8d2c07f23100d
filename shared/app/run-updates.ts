import { NotFoundError, RunConflictError } from '../domain/errors.ts';
import { isTerminal, type Run } from '../domain/run.ts';
import type { RunStore } from '../ports/run-store.ts';

const MAX_ATTEMPTS = 8;

/**
 * Read-modify-write with the store's version check, retried when someone else
 * wrote first. `change` returns the same object to leave the run alone
 * (e.g. it is already terminal), so callers never fight over a finished run.
 *
 * `known` is the run as the caller last saw it: the first attempt writes from
 * it without reading again (the version check still proves it current). When
 * `change` leaves a known run alone, the answer is read from the store, so a
 * caller never gets a stale run back. A write that lost its check is retried
 * from the run the store answered with (RunConflictError.current) where it
 * gave one, again without a read.
 *
 * @example
 * await mutateRun(store, id, (run) => requestCancel(run, clock.now()));
 */
export async function mutateRun(
  store: RunStore,
  id: string,
  change: (run: Run) => Run,
  known?: Run,
): Promise<Run> {
  // The run to decide from without a read: the caller's (`cached`: it may be stale), or the one a lost
  // write's RunConflictError.current says the store holds (as good as a read).
  let given: { readonly run: Run; readonly cached: boolean } | undefined =
    known === undefined ? undefined : { run: known, cached: true };
  for (let attempt = 1; ; attempt++) {
    const current = given?.run ?? (await store.getRun(id));
    const cached = given?.cached === true;
    given = undefined;
    if (current === undefined) throw new NotFoundError(`No run with id ${id}`);
    const next = change(current);
    if (next === current) {
      if (cached) continue;
      return current;
    }
    try {
      return await store.updateRun(next, current.version);
    } catch (error) {
      if (!(error instanceof RunConflictError) || attempt >= MAX_ATTEMPTS) throw error;
      // The store said what it found: decide from that rather than read the run again.
      // What both run stores put there is a Run.
      if (error.current !== undefined) given = { run: error.current as Run, cached: false };
    }
  }
}

/** Like mutateRun, but a run that is already terminal is returned untouched. */
export function settleRun(store: RunStore, id: string, change: (run: Run) => Run, known?: Run): Promise<Run> {
  return mutateRun(store, id, (run) => (isTerminal(run.state) ? run : change(run)), known);
}
