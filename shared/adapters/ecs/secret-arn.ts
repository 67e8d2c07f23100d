import { DescribeSecretCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';

/** How long a described ARN is reused: five minutes. */
export const SECRET_ARN_TTL_MS = 5 * 60 * 1000;

/**
 * Resolves a secret NAME to the full Secrets Manager ARN that an ECS
 * container definition needs in `secrets[].valueFrom`, with `DescribeSecret`:
 * the value itself is never read, so the dispatcher needs no
 * `secretsmanager:GetSecretValue` for ECS runs (the task's execution role does).
 *
 * Answers are kept per resolver (one per Lambda container) for `ttlMs`
 * (default {@link SECRET_ARN_TTL_MS}): a name's ARN changes only when the
 * secret is deleted and created again, and a burst of runs with the same SSH
 * key then describes it once. Failures are not kept.
 *
 * @example
 * const secretArn = describeSecretArn(new SecretsManagerClient({}));
 * await secretArn('db-admin-password'); // 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:db-admin-password-AbCdEf'
 */
export function describeSecretArn(
  client: SecretsManagerClient,
  options: { readonly ttlMs?: number; readonly nowMs?: () => number } = {},
): (name: string) => Promise<string> {
  const ttlMs = options.ttlMs ?? SECRET_ARN_TTL_MS;
  const nowMs = options.nowMs ?? Date.now;
  const cache = new Map<string, { readonly arn: Promise<string>; readonly until: number }>();
  return (name) => {
    if (name.startsWith('arn:')) return Promise.resolve(name);
    const hit = cache.get(name);
    if (hit !== undefined && hit.until > nowMs()) return hit.arn;
    const arn = describe(client, name);
    cache.set(name, { arn, until: nowMs() + ttlMs });
    // Only answers are kept: a failure is asked again by the next run.
    arn.catch(() => cache.delete(name));
    return arn;
  };
}

async function describe(client: SecretsManagerClient, name: string): Promise<string> {
  try {
    const { ARN } = await client.send(new DescribeSecretCommand({ SecretId: name }));
    if (ARN === undefined) throw new LaunchRejectedError(`Secret ${name} has no ARN`);
    return ARN;
  } catch (error) {
    if (error instanceof LaunchRejectedError) throw error;
    const e = error as { name?: string; $fault?: string; $metadata?: unknown };
    if (e.name === 'ResourceNotFoundException') {
      throw new LaunchRejectedError(`Secret ${name} does not exist`, { cause: error });
    }
    if (e.$metadata !== undefined && e.$fault === 'client' && e.name !== 'ThrottlingException') {
      throw new LaunchRejectedError(`Secret ${name} could not be described (${e.name})`, { cause: error });
    }
    throw new LauncherUnavailableError(`Secrets Manager did not answer for ${name}; will retry`, {
      cause: error,
    });
  }
}
