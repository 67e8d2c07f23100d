import { type PlaintextPassword, takePlaintextPasswords } from '../domain/ephemeral-secrets.ts';
import { ValidationError } from '../domain/errors.ts';
import type { Run, SecretBinding } from '../domain/run.ts';
import type { AppDeps } from './deps.ts';

/** A run request's plaintext passwords, taken out of its extra vars before anything is stored. */
export interface SubmittedPasswords {
  /** The extra vars without them: what the run record keeps. */
  readonly extraVars: Record<string, unknown>;
  readonly passwords: readonly PlaintextPassword[];
}

/**
 * Take the plaintext passwords out of a request and check its bindings: a
 * client may not bind a name in the per-run namespace (another run's
 * password). Throws ValidationError naming variables, never values.
 *
 * @example
 * const { extraVars, passwords } = submittedPasswords(deps, body);
 */
export function submittedPasswords(
  deps: Pick<AppDeps, 'runSecrets'>,
  body: { readonly extraVars: Readonly<Record<string, unknown>>; readonly secrets: readonly SecretBinding[] },
): SubmittedPasswords {
  body.secrets.forEach((binding, i) => {
    if (deps.runSecrets?.owns(binding.secret) === true) {
      throw new ValidationError(`Secret ${binding.secret} is a per-run secret of another run`, [
        {
          path: `body.secrets.${i}.secret`,
          message: 'names a per-run secret, which only its own run may use',
        },
      ]);
    }
  });
  return takePlaintextPasswords(body.extraVars);
}

/** Why a run with plaintext passwords cannot be accepted here, or undefined when it can. */
export function perRunSecretsProblem(
  deps: Pick<AppDeps, 'runSecrets'>,
  passwords: readonly PlaintextPassword[],
): string | undefined {
  const [first] = passwords;
  if (first === undefined || deps.runSecrets !== undefined) return undefined;
  return `This deployment has no per-run secret store to keep the plaintext ${first.var} in (in AWS, RUN_SECRETS_PREFIX is not set): bind ${first.var} to a named secret instead`;
}

/**
 * The stored form of a run with plaintext passwords: the record without
 * them, listing their variables in `ephemeralSecrets`. A queued run's
 * values go to the per-run secret store and the run binds their names, so
 * the task gets them through the ordinary secret-binding path; a refused run
 * keeps no value anywhere.
 */
export async function keepPasswords(
  deps: Pick<AppDeps, 'runSecrets'>,
  run: Run,
  submitted: SubmittedPasswords,
): Promise<Run> {
  if (submitted.passwords.length === 0) return run;
  const vars = submitted.passwords.map((p) => p.var);
  const stored: Run = { ...run, extraVars: submitted.extraVars, ephemeralSecrets: vars };
  if (run.state !== 'queued' || deps.runSecrets === undefined) return stored;
  const bindings: SecretBinding[] = [];
  try {
    for (const password of submitted.passwords) {
      bindings.push({
        var: password.var,
        secret: await deps.runSecrets.put(run.id, password.var, password.value),
      });
    }
  } catch (error) {
    await deps.runSecrets.deleteFor(run.id, vars).catch(() => {});
    throw error;
  }
  return { ...stored, secrets: [...run.secrets, ...bindings] };
}

/** Delete the per-run secrets of runs that were not recorded after all (a retried submit, a failed write). */
export async function dropPasswords(deps: Pick<AppDeps, 'runSecrets' | 'logger'>, runs: readonly Run[]) {
  for (const run of runs) {
    const keys = run.ephemeralSecrets ?? [];
    if (keys.length === 0 || deps.runSecrets === undefined) continue;
    await deps.runSecrets.deleteFor(run.id, keys).catch((error: unknown) => {
      deps.logger.error('deleting the per-run secrets of an unrecorded run failed', {
        runId: run.id,
        error: error as Error,
      });
    });
  }
}
