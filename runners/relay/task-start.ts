import { mkdirSync, writeFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { prepareTask } from '../../shared/app/task-prep.ts';
import type { Run } from '../../shared/domain/run.ts';
import { SHIM_PREFIX } from '../../shared/domain/shim-protocol.ts';
import type { Target } from '../../shared/domain/target.ts';
import type { RunningExecution } from '../../shared/ports/executor.ts';
import type { PreparedTask } from '../../shared/ports/launcher.ts';
import type { RelayAgentOptions } from './agent-options.ts';
import { type EarlyLookups, withKnown } from './early-lookups.ts';
import type { LogShipper } from './log-shipper.ts';

/** In a run's work dir: the attempt its task was started for, so a restarted relay resumes rather than starts. */
export const ATTEMPT_FILE = 'attempt';

/**
 * The task of a run this relay has just claimed: the one an earlier
 * incarnation started for this very attempt and died before recording
 * (resumed through the executor, never started twice), or a new one in a
 * fresh work dir, marked with the attempt before it starts. A target from
 * the relay message's plan, what was looked up beside the claim, and the
 * task prepared while the claim was made durable (`prepared`), are used
 * instead of asking again.
 *
 * @example
 * const execution = await startOrResume(options, run, shipper, join(options.workRoot, run.id));
 */
export async function startOrResume(
  o: RelayAgentOptions,
  run: Run,
  shipper: LogShipper,
  workDir: string,
  how: StartOptions = {},
): Promise<RunningExecution> {
  const runId = run.id;
  const attemptFile = join(workDir, ATTEMPT_FILE);
  // This attempt was started by an earlier incarnation that died before recording it: resume that task.
  // A claim of the record the message was sent for is the first claim of this attempt: nothing to resume.
  const started = how.freshClaim === true ? '' : await readFile(attemptFile, 'utf8').catch(() => '');
  const resumed =
    started === String(run.attempt)
      ? await o.executor.resume?.(runId, workDir, (lines) => shipper.push(lines))
      : undefined;
  if (resumed !== undefined) {
    shipper.system(`${SHIM_PREFIX}relay ${o.id} restarted and resumed the task it had started`);
    return resumed;
  }
  const { spec, secretEnv } = await (how.prepared ?? prepareFresh(o, run, workDir, how));
  shipper.system(`${SHIM_PREFIX}starting on relay ${o.id} (${o.executor.name} executor)`);
  return o.executor.start({ runId, image: run.image ?? '', spec, secretEnv, workDir }, (lines) =>
    shipper.push(lines),
  );
}

/**
 * A new task of a run this relay has claimed, up to its start: the task
 * prepared (prepareTask, from what is known) and its fresh work dir marked
 * with the attempt. Starts nothing, so it may run while the claim is made
 * durable (RelayClaimRequest.onCommitted); a mark with no task behind it
 * resumes nothing, and the next attempt's fresh work dir replaces it.
 *
 * @example
 * const prepared = prepareFresh(options, claimed, join(options.workRoot, claimed.id), { early });
 */
export async function prepareFresh(
  o: RelayAgentOptions,
  run: Run,
  workDir: string,
  how: Pick<StartOptions, 'target' | 'early'> = {},
): Promise<PreparedTask> {
  const deps = withKnown(o, run, how);
  // Preparation and the work dir at once; the attempt mark is written before the start, so a crash
  // right after it leaves the mark resume looks for (a mark with no task behind it resumes nothing).
  const [prepared, dir] = await Promise.allSettled([
    prepareTask(deps, run),
    freshWorkDir(workDir, run.attempt),
  ]);
  if (prepared.status === 'rejected') {
    await rm(workDir, { recursive: true, force: true }).catch(() => {});
    throw prepared.reason;
  }
  if (dir.status === 'rejected') throw dir.reason;
  return prepared.value;
}

export interface StartOptions {
  /** The run's target as dispatch read it (the relay message's plan): not read again. */
  readonly target?: Target;
  /** The run was just claimed from the record its message was sent for, so no earlier task can exist. */
  readonly freshClaim?: boolean;
  /** What was looked up beside the claim (early-lookups.ts): not asked for again. */
  readonly early?: EarlyLookups;
  /** With `freshClaim`: the task already prepared in its work dir (prepareFresh), to start as it is. */
  readonly prepared?: Promise<PreparedTask>;
}

/**
 * The work dir of a new task, in sync calls: a mkdir and the mark's write,
 * system calls of microseconds each, on the way to the start, where the
 * promise API pays a thread-pool round trip for each. The mkdir is the
 * check: an earlier attempt's dir (rare, and of any size) makes it fail with
 * EEXIST, and is then removed without blocking; a missing work root with
 * ENOENT, and is made.
 */
async function freshWorkDir(workDir: string, attempt: number): Promise<void> {
  try {
    mkdirSync(workDir, { mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST' && code !== 'ENOENT') throw error;
    if (code === 'EEXIST') await rm(workDir, { recursive: true, force: true });
    mkdirSync(workDir, { recursive: true, mode: 0o700 });
  }
  writeFileSync(join(workDir, ATTEMPT_FILE), String(attempt), { mode: 0o600 });
}
