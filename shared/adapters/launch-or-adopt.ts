import { LaunchRejectedError } from '../domain/errors.ts';
import type { Run } from '../domain/run.ts';
import type { RunAttempt } from '../ports/launcher.ts';

/**
 * The steps of one idempotent launch on a backend (docs: DESIGN.md, reliability rules): the run's
 * resource is named from its id and attempt, so a redelivery finds what an earlier delivery started.
 */
export interface LaunchSteps<Name> {
  /** What the backend resource is, for the refusal when a run id cannot name one: `an ACI container group`. */
  readonly resource: string;
  /** The deterministic name (or names) of the run attempt's resource; throws when the run id cannot make one. */
  readonly nameFor: (key: RunAttempt) => Name;
  /** The handle of what an earlier delivery already created under that name, whatever its state, or undefined. */
  readonly adopt: (name: Name) => Promise<string | undefined>;
  /** Create the resource and start the task: its handle. Called only when there is nothing to adopt. */
  readonly start: (name: Name) => Promise<string>;
}

/**
 * Launch a run attempt at most once: name its resource, adopt what exists under that name, and start
 * one only when nothing does. A run id the backend cannot use as a name is refused for good
 * (LaunchRejectedError), before anything is created.
 *
 * @example
 * const handle = await launchOrAdopt(run, {
 *   resource: 'an ACI container group',
 *   nameFor: containerGroupName,
 *   adopt: async (name) => ((await exists(name)) ? handleOf(name) : undefined),
 *   start: async (name) => { await create(name); return handleOf(name); },
 * });
 */
export async function launchOrAdopt<Name>(run: Run, steps: LaunchSteps<Name>): Promise<string> {
  let name: Name;
  try {
    name = steps.nameFor({ runId: run.id, attempt: run.attempt });
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new LaunchRejectedError(`Run ${run.id} cannot be named as ${steps.resource}: ${why}`);
  }
  return (await steps.adopt(name)) ?? steps.start(name);
}
