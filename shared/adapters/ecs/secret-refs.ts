import type { Secret } from '@aws-sdk/client-ecs';
import { LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import type { PreparedTask } from '../../ports/launcher.ts';
import type { RunSecrets } from '../secrets-manager/run-secrets.ts';

/** Run kinds whose connection material may be minted at launch (kubeconfig tokens, database logins). */
const MINTING_KINDS: ReadonlySet<Run['kind']> = new Set(['cluster_play', 'k8s_op', 'database_play']);
/** Run kinds that may reference secrets without a binding of their own (SSH keys, Portainer, minted material). */
const MAY_REFERENCE_SECRETS: ReadonlySet<Run['kind']> = new Set([...MINTING_KINDS, 'vm', 'portainer']);

/** Values may have been minted for the run (connection material, a checked-out managed account). */
export const mayHaveMintedSecrets = (run: Run): boolean =>
  MINTING_KINDS.has(run.kind) || run.managedAccount !== undefined;

/**
 * The run's secrets may be its own — minted at launch, or plaintext passwords
 * submitted with it and kept in the per-run store — so it may have a task
 * definition revision of its own (stored secrets use shared revisions).
 */
export const mayHaveOwnTaskDefinition = (run: Run): boolean =>
  mayHaveMintedSecrets(run) || (run.ephemeralSecrets?.length ?? 0) > 0;

/** The run may reference secrets. */
export const mayReferenceSecrets = (run: Run): boolean =>
  run.secrets.length > 0 || MAY_REFERENCE_SECRETS.has(run.kind);

/** Every env the spec expects a secret value in. */
export function secretEnvNamesOf(spec: PreparedTask['spec']): string[] {
  return [
    ...new Set([
      ...spec.secretVars.map((v) => v.env),
      ...(spec.secretEnvNames ?? []),
      ...(spec.sshKeyEnv === undefined ? [] : [spec.sshKeyEnv]),
    ]),
  ];
}

/**
 * `valueFrom` for each secret env: the ARN of the stored secret it names, or
 * of a per-run secret holding a value minted for this run. No value is ever
 * put in a RunTask request (see EcsLauncher).
 *
 * @example
 * const refs = await secretReferences({ secretArn, runSecrets }, run, prepared, secretEnvNamesOf(prepared.spec));
 * // [{ name: 'RW_SECRET_0', valueFrom: 'arn:aws:secretsmanager:…:secret:db-admin-AbCdEf' }]
 */
export async function secretReferences(
  deps: {
    readonly secretArn: (name: string) => Promise<string>;
    readonly runSecrets?: RunSecrets | undefined;
  },
  run: Run,
  prepared: PreparedTask,
  envs: readonly string[],
): Promise<Secret[]> {
  const secrets: Secret[] = [];
  for (const env of envs) {
    const name = prepared.secretRefs[env];
    if (name !== undefined) {
      try {
        secrets.push({ name: env, valueFrom: await deps.secretArn(name) });
      } catch (error) {
        if (error instanceof LaunchRejectedError || error instanceof LauncherUnavailableError) throw error;
        throw new LaunchRejectedError(`Secret ${name} (for ${env}) could not be resolved to an ARN`, {
          cause: error,
        });
      }
      continue;
    }
    const value = prepared.secretEnv[env];
    if (value === undefined)
      throw new LaunchRejectedError(`The task expects secret ${env}, but nothing provides it`);
    if (deps.runSecrets === undefined) {
      throw new LaunchRejectedError(
        `Run ${run.id} needs ${env} minted at launch, but this ECS launcher has no per-run secret store`,
      );
    }
    secrets.push({ name: env, valueFrom: await deps.runSecrets.put(run.id, env, value) });
  }
  return secrets;
}
