import { mkdirSync } from 'node:fs';
import { readFile, rm, stat } from 'node:fs/promises';
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
import type { SpareWorkDirs } from './work-dirs.ts';

/** How many earlier attempts' work dirs a new attempt looks for (left by a relay that died during them). */
const EARLIER_ATTEMPTS_SWEPT = 8;

/**
 * The work dir of one attempt of a run, `<work root>/<run id>.<attempt>`.
 * That the dir exists is the attempt's mark: it is made before the task
 * starts, so a relay restarted after the start resumes that task and never
 * starts a second one. One mkdir per run, where a dir and a mark file inside
 * it were two creates (each 0.2–0.5 ms on an ext4 disk whose journal the
 * WAL's fsyncs keep busy).
 *
 * @example
 * workDirOf('/var/lib/relay/work', { id: 'run-1', attempt: 2 }); // '/var/lib/relay/work/run-1.2'
 */
export function workDirOf(workRoot: string, run: Pick<Run, 'id' | 'attempt'>): string {
  return join(workRoot, `${run.id}.${run.attempt}`);
}

/**
 * The work dir of this very attempt if one was made, by this relay before a
 * restart: the attempt's own, or one named `<run id>` with an `attempt` file
 * naming it, as relays made them before work dirs were named by attempt (so
 * an upgrade in the middle of a run resumes and adopts what it left).
 *
 * @example
 * const earlier = await existingWorkDir(options.workRoot, run); // undefined: nothing to resume
 */
export async function existingWorkDir(
  workRoot: string,
  run: Pick<Run, 'id' | 'attempt'>,
): Promise<string | undefined> {
  const dir = workDirOf(workRoot, run);
  const made = await stat(dir).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (made) return dir;
  const legacy = join(workRoot, run.id);
  const mark = await readFile(join(legacy, 'attempt'), 'utf8').catch(() => '');
  return mark === String(run.attempt) ? legacy : undefined;
}

/** A task started or resumed, and the work dir it runs in (removed once the run has ended). */
export interface StartedTask {
  readonly execution: RunningExecution;
  readonly workDir: string;
}

/**
 * The task of a run this relay has just claimed: the one an earlier
 * incarnation started for this very attempt and died before recording
 * (resumed through the executor, never started twice), or a new one in a
 * fresh work dir, made before it starts. A target from the relay message's
 * plan, what was looked up beside the claim, and the task prepared while the
 * claim was made durable (`prepared`), are used instead of asking again.
 *
 * @example
 * const { execution, workDir } = await startOrResume(options, run, shipper);
 */
export async function startOrResume(
  o: RelayAgentOptions,
  run: Run,
  shipper: LogShipper,
  how: StartOptions = {},
): Promise<StartedTask> {
  const runId = run.id;
  // This attempt was started by an earlier incarnation that died before recording it: resume that task.
  // A claim of the record the message was sent for is the first claim of this attempt: nothing to resume.
  const earlier = how.freshClaim === true ? undefined : await existingWorkDir(o.workRoot, run);
  const resumed =
    earlier === undefined
      ? undefined
      : await o.executor.resume?.(runId, earlier, (lines) => shipper.push(lines));
  if (earlier !== undefined && resumed !== undefined) {
    shipper.system(`${SHIM_PREFIX}relay ${o.id} restarted and resumed the task it had started`);
    return { execution: resumed, workDir: earlier };
  }
  const workDir = workDirOf(o.workRoot, run);
  // A dir from before work dirs were named by attempt, with no task behind it: the new one replaces it.
  if (earlier !== undefined && earlier !== workDir) await rm(earlier, { recursive: true, force: true });
  const { spec, secretEnv } = await (how.prepared ?? prepareFresh(o, run, how));
  const starting = o.executor.start({ runId, image: run.image ?? '', spec, secretEnv, workDir }, (lines) =>
    shipper.push(lines),
  );
  // Logged once the start is under way rather than ahead of it: the line does not hold the start up, and it
  // still comes first, as a task's output reaches onLines on later turns.
  shipper.system(`${SHIM_PREFIX}starting on relay ${o.id} (${o.executor.name} executor)`);
  return { execution: await starting, workDir };
}

/**
 * A new task of a run this relay has claimed, up to its start: the task
 * prepared (prepareTask, from what is known) and the attempt's fresh work dir
 * (workDirOf). Starts nothing, so it may run while the claim is made durable
 * (RelayClaimRequest.onCommitted); a work dir with no task behind it resumes
 * nothing, and is replaced if the same attempt starts again.
 *
 * @example
 * const prepared = prepareFresh(options, claimed, { early });
 */
export async function prepareFresh(
  o: RelayAgentOptions,
  run: Run,
  how: Pick<StartOptions, 'target' | 'early' | 'spares'> = {},
): Promise<PreparedTask> {
  const deps = withKnown(o, run, how);
  const workDir = workDirOf(o.workRoot, run);
  // Preparation and the work dir at once; the dir is made before the start, so a crash right after it
  // leaves the mark resume looks for (a dir with no task behind it resumes nothing).
  const [prepared, dir] = await Promise.allSettled([
    prepareTask(deps, run),
    freshWorkDir(o.workRoot, run, workDir, how.spares),
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
  /** Ended runs' emptied work dirs: a new work dir is one of them renamed, when one waits. */
  readonly spares?: SpareWorkDirs;
}

/**
 * The work dir of a new task: a spare renamed into place (work-dirs.ts) or
 * one mkdir, in a sync call (microseconds on an idle disk, on the way to the
 * start, where the promise API pays a thread-pool round trip). The mkdir is
 * the check: a dir this attempt made before (rare) makes it fail with EEXIST
 * and is then removed without blocking; a missing work root fails it with
 * ENOENT, and is made. Earlier attempts' dirs, left by a relay that died
 * during them, go too.
 */
async function freshWorkDir(
  workRoot: string,
  run: Pick<Run, 'id' | 'attempt'>,
  workDir: string,
  spares: SpareWorkDirs | undefined,
): Promise<void> {
  try {
    if (spares?.take(workDir) !== true) mkdirSync(workDir, { mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST' && code !== 'ENOENT') throw error;
    if (code === 'EEXIST') await rm(workDir, { recursive: true, force: true });
    mkdirSync(workDir, { recursive: true, mode: 0o700 });
  }
  if (run.attempt <= 1) return;
  const first = Math.max(1, run.attempt - EARLIER_ATTEMPTS_SWEPT);
  const earlier = [join(workRoot, run.id)];
  for (let attempt = first; attempt < run.attempt; attempt++)
    earlier.push(workDirOf(workRoot, { id: run.id, attempt }));
  await Promise.all(earlier.map((dir) => rm(dir, { recursive: true, force: true })));
}
