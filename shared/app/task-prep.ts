import { LaunchRejectedError, NotFoundError } from '../domain/errors.ts';
import { inventoryForRun } from '../domain/inventory.ts';
import { amend, type Run } from '../domain/run.ts';
import { assetTypeOf } from '../domain/task.ts';
import { checkTaskSpec, type TaskSpec } from '../domain/task-spec.ts';
import type { AssetStore } from '../ports/asset-store.ts';
import { type Clock, systemClock } from '../ports/clock.ts';
import type { PreparedTask, PrepareOptions } from '../ports/launcher.ts';
import type { RunStore } from '../ports/run-store.ts';
import type { SecretSource } from '../ports/secret-source.ts';
import type { TargetStore } from '../ports/target-store.ts';
import { type AssetStorage, taskAsset } from './asset-access.ts';
import { type ConnectionDeps, connectionMaterial } from './connection-material.ts';
import { storageOf } from './deps.ts';
import { mutateRun } from './run-updates.ts';
import { lookupTarget } from './target-lookup.ts';

/** The settings' default for `start_deadline_seconds`. */
const DEFAULT_START_DEADLINE_SECONDS = 900;

/**
 * Everything a runner needs for one run: the secret-free TaskSpec and,
 * separately, the resolved secret values. Errors name what is missing,
 * never a value.
 */
export async function prepareTask(
  deps: ConnectionDeps & {
    readonly store: RunStore;
    readonly targets: TargetStore;
    readonly assets: AssetStore;
    /** How the run's runner reaches the asset (read URLs, staging); default `assets` as what it is. */
    readonly storage?: AssetStorage;
    /** The lifetime of a task's asset read URL (`start_deadline_seconds`, default 900). */
    readonly startDeadlineSeconds?: number;
    readonly secrets: SecretSource;
    readonly clock?: Clock;
  },
  run: Run,
  /** `resolveSecrets: false` for backends that fetch secrets themselves; `known`: what dispatch already read. */
  options: PrepareOptions = {},
): Promise<PreparedTask> {
  const target =
    run.targetId === undefined
      ? undefined
      : options.known !== undefined
        ? options.known.target
        : await lookupTarget(deps, run.targetId);
  if (run.targetId !== undefined && target === undefined) {
    throw new LaunchRejectedError(`Target ${run.targetId} no longer exists`);
  }
  const asset = await taskAsset(storageOf(deps), run, {
    startDeadlineSeconds: deps.startDeadlineSeconds ?? DEFAULT_START_DEADLINE_SECONDS,
    clock: deps.clock ?? systemClock,
  });
  const assetType = assetTypeOf(run.asset);
  if (assetType === undefined) throw new LaunchRejectedError(`No runner knows how to run ${run.asset}`);

  const secretEnv: Record<string, string> = {};
  const secretRefs: Record<string, string> = {};
  const secretVars: { var: string; env: string }[] = [];
  for (const [i, binding] of run.secrets.entries()) {
    const env = `RW_SECRET_${i}`;
    if (options.resolveSecrets !== false) {
      try {
        secretEnv[env] = await deps.secrets.get(binding.secret);
      } catch (error) {
        if (error instanceof NotFoundError) {
          throw new LaunchRejectedError(
            `Secret ${binding.secret} (bound to ${binding.var}) could not be resolved`,
          );
        }
        throw error;
      }
    }
    secretRefs[env] = binding.secret;
    secretVars.push({ var: binding.var, env });
  }

  const inventory = inventoryForRun(
    run.kind,
    target,
    run.sshUser === undefined ? {} : { sshUser: run.sshUser },
  );
  const material = await connectionMaterial(deps, run, target, {
    resolveStored: options.resolveSecrets !== false,
  });
  if (material.leaseId !== undefined && material.leaseId !== run.credentialLease) {
    // Recorded before the task can start, so whoever ends the run can check the account in.
    const leaseId = material.leaseId;
    const at = () => deps.clock?.now() ?? new Date().toISOString();
    try {
      await mutateRun(deps.store, run.id, (r) => amend(r, at(), { credentialLease: leaseId }), run);
    } catch (error) {
      // The run ended while the account was being checked out (cancel, timeout): nobody would check it in.
      await deps.credentials?.checkin(leaseId).catch(() => {});
      throw error;
    }
  }
  Object.assign(secretEnv, material.secretEnv);
  Object.assign(secretRefs, material.secretRefs);

  const spec: TaskSpec = {
    runId: run.id,
    kind: run.kind,
    asset,
    assetType,
    inventory,
    // The run's own extra vars win: an operator may point a play at another port or database.
    extraVars: { ...material.vars, ...run.extraVars },
    secretVars: [...material.secretVars, ...secretVars],
    ...(material.secretEnvNames.length === 0 ? {} : { secretEnvNames: material.secretEnvNames }),
    ...(material.sshKeyEnv === undefined ? {} : { sshKeyEnv: material.sshKeyEnv }),
    ...(Object.keys(material.env).length === 0 ? {} : { env: material.env }),
    ...(run.operation === undefined ? {} : { operation: run.operation }),
    timeoutSeconds: run.timeoutSeconds,
  };
  // The shim checks the spec against the same schema; one it would refuse must not be sent at all.
  const checked = checkTaskSpec(spec);
  if (!checked.ok) {
    throw new LaunchRejectedError(`Run ${run.id} makes an invalid task spec: ${checked.problems.join('; ')}`);
  }
  return { spec, secretEnv, secretRefs };
}
