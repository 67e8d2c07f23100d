import * as z from 'zod/mini';
import { ENV_NAME } from '../../shared/domain/env-name.ts';
import { ShimError } from './errors.ts';

/** The variable naming the per-run secrets the shim fetches itself: `{ "<env>": "<secret ARN or name>" }`. */
export const SECRET_REFS_ENV = 'RW_SECRET_REFS';

const SecretRefsSchema = z.record(z.string().check(z.regex(ENV_NAME)), z.string().check(z.minLength(1)));

/** Reads one secret's value; the default is Secrets Manager GetSecretValue with the task role. */
export type SecretReader = (ref: string) => Promise<string>;

/**
 * `RW_SECRET_REFS` checked: env name → Secrets Manager reference. Only
 * references travel in the RunTask overrides, never a value. Empty when unset.
 */
export function secretRefsOf(env: NodeJS.ProcessEnv): Record<string, string> {
  const raw = env[SECRET_REFS_ENV];
  if (raw === undefined || raw === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ShimError(`${SECRET_REFS_ENV} is not valid JSON`);
  }
  const checked = SecretRefsSchema.safeParse(parsed);
  if (!checked.success) {
    throw new ShimError(`${SECRET_REFS_ENV} must map environment variable names to secret references`);
  }
  return checked.data;
}

/**
 * The environment with each per-run secret fetched into the variable the
 * launcher named — the very names a task-definition `secrets` entry would
 * have set — so everything after (redaction, play vars, key files) sees them
 * as before. The SDK is loaded only when there is something to fetch. A
 * failure names the variable and the reference, never a value.
 *
 * @example
 * const full = await withFetchedSecrets(process.env); // RW_SECRET_REFS={"RW_SECRET_0":"arn:…"} → full.RW_SECRET_0
 */
export async function withFetchedSecrets(
  env: NodeJS.ProcessEnv,
  read?: SecretReader,
): Promise<NodeJS.ProcessEnv> {
  const refs = secretRefsOf(env);
  const names = Object.keys(refs);
  if (names.length === 0) return env;
  const reader = read ?? (await secretsManagerReader(env));
  const fetched: Record<string, string> = {};
  for (const name of names) {
    const ref = refs[name] as string;
    try {
      fetched[name] = await reader(ref);
    } catch (error) {
      throw new ShimError(`could not read secret ${ref} for ${name}: ${(error as Error)?.name ?? 'error'}`);
    }
  }
  return { ...env, ...fetched };
}

/** GetSecretValue with the default credential chain (the task role on ECS); region and endpoint from `env`. */
async function secretsManagerReader(env: NodeJS.ProcessEnv): Promise<SecretReader> {
  const { GetSecretValueCommand, SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
  const endpoint = env.AWS_ENDPOINT_URL_SECRETS_MANAGER ?? env.AWS_ENDPOINT_URL;
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  const client = new SecretsManagerClient({
    ...(region === undefined ? {} : { region }),
    ...(endpoint === undefined ? {} : { endpoint }),
  });
  return async (ref) => {
    const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: ref }));
    if (SecretString === undefined) throw new ShimError('the secret has no string value');
    return SecretString;
  };
}
