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
 * The secret envs whose values belong to this run alone: values minted at
 * launch (no stored secret names them) and plaintext passwords submitted with
 * the run (kept in the per-run store, listed in `ephemeralSecrets`). The task
 * shim fetches these itself (RW_SECRET_REFS), so no run needs a task
 * definition of its own; every other secret env names a stored secret.
 */
export function perRunEnvsOf(
  run: Pick<Run, 'ephemeralSecrets'>,
  prepared: PreparedTask,
  envs: readonly string[],
): Set<string> {
  const submitted = new Set(run.ephemeralSecrets ?? []);
  const submittedEnvs = new Set(
    prepared.spec.secretVars.filter((v) => submitted.has(v.var)).map((v) => v.env),
  );
  return new Set(envs.filter((env) => prepared.secretRefs[env] === undefined || submittedEnvs.has(env)));
}

/**
 * `valueFrom` for each stored secret env: the ARN of the stored secret it
 * names, for a task-definition `secrets` entry. No value is ever put in a
 * RunTask request (see EcsLauncher).
 *
 * @example
 * const refs = await storedSecretReferences({ secretArn }, prepared, ['RW_SSH_KEY']);
 * // [{ name: 'RW_SSH_KEY', valueFrom: 'arn:aws:secretsmanager:…:secret:rw/ssh-key-AbCdEf' }]
 */
export async function storedSecretReferences(
  deps: { readonly secretArn: (name: string) => Promise<string> },
  prepared: PreparedTask,
  envs: readonly string[],
): Promise<Secret[]> {
  const secrets: Secret[] = [];
  for (const env of envs) {
    const name = prepared.secretRefs[env];
    if (name === undefined)
      throw new LaunchRejectedError(`The task expects secret ${env}, but nothing provides it`);
    try {
      secrets.push({ name: env, valueFrom: await deps.secretArn(name) });
    } catch (error) {
      if (error instanceof LaunchRejectedError || error instanceof LauncherUnavailableError) throw error;
      throw new LaunchRejectedError(`Secret ${name} (for ${env}) could not be resolved to an ARN`, {
        cause: error,
      });
    }
  }
  return secrets;
}

/**
 * What the task shim fetches itself (`RW_SECRET_REFS`): env → the per-run
 * secret's name (a submitted password, already stored at submit) or the ARN
 * of a value minted now and put in the per-run store. References only, never
 * a value: the map travels in the RunTask overrides.
 *
 * @example
 * const refs = await perRunSecretReferences({ runSecrets }, run, prepared, ['KUBECONFIG']);
 * // { KUBECONFIG: 'arn:aws:secretsmanager:…:secret:remote-worker/dev/runs/<runId>/KUBECONFIG-AbCdEf' }
 */
export async function perRunSecretReferences(
  deps: { readonly runSecrets?: RunSecrets | undefined },
  run: Run,
  prepared: PreparedTask,
  envs: readonly string[],
): Promise<Record<string, string>> {
  const refs: Record<string, string> = {};
  for (const env of envs) {
    const name = prepared.secretRefs[env];
    if (name !== undefined) {
      refs[env] = name;
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
    refs[env] = await deps.runSecrets.put(run.id, env, value);
  }
  return refs;
}
