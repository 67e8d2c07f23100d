import { readFileSync } from 'node:fs';
import { checkTaskSpec, NOT_AN_OBJECT, type TaskSpec } from '../../shared/domain/task-spec.ts';
import { ShimError } from './errors.ts';

/**
 * The task spec the shim was handed: `RW_TASK` (the JSON itself) or
 * `RW_TASK_FILE` (a path to it), checked against the one task-spec schema
 * (shared/domain/task-spec.ts) even though the API checked it already: the
 * shim may be started by hand or by an older control plane.
 *
 * @example
 * const spec = parseTaskSpec(taskSpecText(process.env)); // throws ShimError naming every problem
 */
export function parseTaskSpec(text: string): TaskSpec {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ShimError(`the task spec is not valid JSON: ${(error as Error).message}`);
  }
  const checked = checkTaskSpec(raw);
  if (checked.ok) return checked.spec;
  // Not an object at all: there is nothing to list field by field.
  if (checked.problems[0] === NOT_AN_OBJECT) throw new ShimError(NOT_AN_OBJECT);
  throw new ShimError(`invalid task spec: ${checked.problems.join('; ')}`);
}

/** The spec's JSON from `RW_TASK`, else the file `RW_TASK_FILE` names. */
export function taskSpecText(env: NodeJS.ProcessEnv): string {
  if (env.RW_TASK !== undefined) return env.RW_TASK;
  if (env.RW_TASK_FILE === undefined) throw new ShimError('set RW_TASK or RW_TASK_FILE');
  try {
    return readFileSync(env.RW_TASK_FILE, 'utf8');
  } catch (error) {
    throw new ShimError(`cannot read RW_TASK_FILE: ${(error as Error).message}`);
  }
}
