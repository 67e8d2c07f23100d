import { DescribeSecretCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';

/**
 * Resolves a secret NAME to the full Secrets Manager ARN that an ECS
 * container definition needs in `secrets[].valueFrom`, with `DescribeSecret`:
 * the value itself is never read, so the dispatcher needs no
 * `secretsmanager:GetSecretValue` for ECS runs (the task's execution role does).
 *
 * @example
 * const secretArn = describeSecretArn(new SecretsManagerClient({}));
 * await secretArn('db-admin-password'); // 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:db-admin-password-AbCdEf'
 */
export function describeSecretArn(client: SecretsManagerClient): (name: string) => Promise<string> {
  return async (name) => {
    if (name.startsWith('arn:')) return name;
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
  };
}
