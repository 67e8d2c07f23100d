import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { storageOf } from '../../shared/app/deps.ts';
import { prepareTask } from '../../shared/app/task-prep.ts';
import type { Run } from '../../shared/domain/run.ts';
import type { RelayPlan } from '../../shared/domain/run-message.ts';
import { SHIM_PREFIX } from '../../shared/domain/shim-protocol.ts';
import type { Target } from '../../shared/domain/target.ts';
import type { AssetLocation, AssetStore } from '../../shared/ports/asset-store.ts';
import type { RunningExecution } from '../../shared/ports/executor.ts';
import type { TargetStore } from '../../shared/ports/target-store.ts';
import type { RelayAgentOptions } from './agent-options.ts';
import type { LogShipper } from './log-shipper.ts';

/** In a run's work dir: the attempt its task was started for, so a restarted relay resumes rather than starts. */
export const ATTEMPT_FILE = 'attempt';

/**
 * The task of a run this relay has just claimed: the one an earlier
 * incarnation started for this very attempt and died before recording
 * (resumed through the executor, never started twice), or a new one in a
 * fresh work dir, marked with the attempt before it starts. A target from
 * the relay message's plan is used instead of reading the registry again.
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
  const deps = withKnown(o, how);
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
  shipper.system(`${SHIM_PREFIX}starting on relay ${o.id} (${o.executor.name} executor)`);
  const { spec, secretEnv } = prepared.value;
  return o.executor.start({ runId, image: run.image ?? '', spec, secretEnv, workDir }, (lines) =>
    shipper.push(lines),
  );
}

export interface StartOptions {
  /** The run's target as dispatch read it (the relay message's plan): not read again. */
  readonly target?: Target;
  /** The run was just claimed from the record its message was sent for, so no earlier task can exist. */
  readonly freshClaim?: boolean;
  /** The run's asset, located while the claim was on its way (locateEarly): not located again. */
  readonly asset?: KnownAsset;
}

/** An asset location asked for before it was needed. */
export interface KnownAsset {
  readonly path: string;
  readonly at: Promise<AssetLocation>;
}

/**
 * Locate the asset a relay message's plan names, beside the claim rather
 * than after it: a read of this host's files, with no effect, so a claim
 * that loses has cost nothing. Only where the relay's runs read assets as
 * files (the `local` storage backend); a read URL needs the claimed run's
 * deadline. A failure surfaces when the task is prepared, as before.
 *
 * @example
 * const asset = locateEarly(options, message.plan);
 * const claim = await store.claimRelayRun(…);
 * await startOrResume(options, claim.run, shipper, workDir, { freshClaim: true, ...(asset && { asset }) });
 */
export function locateEarly(o: RelayAgentOptions, plan: RelayPlan | undefined): KnownAsset | undefined {
  const storage = storageOf(o);
  if (plan === undefined || storage.setup.active !== 'local') return undefined;
  const at = storage.assets.locate(plan.asset);
  at.catch(() => {}); // awaited by the start, if the claim is won; else nobody asks
  return { path: plan.asset, at };
}

/**
 * The work dir of a new task, in sync calls: three system calls of
 * microseconds each, on the way to the start, where the promise API pays
 * a thread-pool round trip for each. An earlier attempt's dir (rare, and
 * of any size) is removed without blocking.
 */
async function freshWorkDir(workDir: string, attempt: number): Promise<void> {
  if (existsSync(workDir)) await rm(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true, mode: 0o700 });
  writeFileSync(join(workDir, ATTEMPT_FILE), String(attempt), { mode: 0o600 });
}

/** The agent's dependencies with what the message and the early look-ups already answered. */
function withKnown(o: RelayAgentOptions, how: StartOptions): RelayAgentOptions {
  const targets = how.target === undefined ? o.targets : knownTarget(o.targets, how.target);
  if (how.asset === undefined) return { ...o, targets };
  const storage = storageOf(o);
  return { ...o, targets, storage: { ...storage, assets: knownAsset(storage.assets, how.asset) } };
}

/** The asset store, with one location already asked for: asked for that path, it answers that. */
const knownAsset = (assets: AssetStore, known: KnownAsset): AssetStore => ({
  backend: assets.backend,
  locate: (path) => (path === known.path ? known.at : assets.locate(path)),
  list: () => assets.list(),
  put: (path, bytes, options) => assets.put(path, bytes, options),
  ...(assets.grantRead === undefined ? {} : { grantRead: assets.grantRead.bind(assets) }),
  ...(assets.read === undefined ? {} : { read: assets.read.bind(assets) }),
});

/** The registry, with one target already known: asked for that id, it answers without a read. */
const knownTarget = (targets: TargetStore, target: Target): TargetStore => ({
  getTarget: (id) => (id === target.id ? Promise.resolve(target) : targets.getTarget(id)),
  putTarget: (t) => targets.putTarget(t),
  listTargets: () => targets.listTargets(),
  deleteTarget: (id) => targets.deleteTarget(id),
});
