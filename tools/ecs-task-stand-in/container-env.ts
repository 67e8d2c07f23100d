import type { ContainerDefinition, ContainerOverride } from '@aws-sdk/client-ecs';
import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

/**
 * A secret ECS could not fetch. The agent then fails the task before the
 * container starts (`stopCode: TaskFailedToStart`,
 * `ResourceInitializationError: unable to pull secrets …`); the message names
 * the reference, never a value.
 */
export class SecretFetchError extends Error {
  override readonly name = 'SecretFetchError';
}

/**
 * `valueFrom` of a Secrets Manager secret, as the ECS agent reads it:
 * `arn:aws:secretsmanager:<region>:<account>:secret:<name>[:<json-key>:<version-stage>:<version-id>]`.
 * The three trailing fields may each be empty (`…:secret:db::AWSPREVIOUS:`).
 */
function parseSecretsManagerRef(valueFrom: string) {
  const parts = valueFrom.split(':');
  if (parts.length < 7 || parts[2] !== 'secretsmanager' || parts[5] !== 'secret') return undefined;
  const nonEmpty = (s: string | undefined) => (s === undefined || s === '' ? undefined : s);
  return {
    secretId: parts.slice(0, 7).join(':'),
    jsonKey: nonEmpty(parts[7]),
    versionStage: nonEmpty(parts[8]),
    versionId: nonEmpty(parts[9]),
  };
}

async function secretValue(client: SecretsManagerClient, valueFrom: string): Promise<string> {
  const ref = parseSecretsManagerRef(valueFrom);
  if (ref === undefined) {
    // SSM parameters (the other valueFrom form) are not used by the launcher; say so rather than guess.
    throw new SecretFetchError(`the stand-in resolves Secrets Manager ARNs only, not ${valueFrom}`);
  }
  let text: string | undefined;
  try {
    ({ SecretString: text } = await client.send(
      new GetSecretValueCommand({
        SecretId: ref.secretId,
        ...(ref.versionStage === undefined ? {} : { VersionStage: ref.versionStage }),
        ...(ref.versionId === undefined ? {} : { VersionId: ref.versionId }),
      }),
    ));
  } catch (error) {
    throw new SecretFetchError(`retrieving secret from ${ref.secretId}: ${(error as Error).name}`);
  }
  if (text === undefined) throw new SecretFetchError(`secret ${ref.secretId} has no SecretString`);
  if (ref.jsonKey === undefined) return text;
  let field: unknown;
  try {
    field = (JSON.parse(text) as Record<string, unknown>)[ref.jsonKey];
  } catch {
    throw new SecretFetchError(`secret ${ref.secretId} is not JSON, so it has no key ${ref.jsonKey}`);
  }
  if (typeof field !== 'string') {
    throw new SecretFetchError(`secret ${ref.secretId} has no string key ${ref.jsonKey}`);
  }
  return field;
}

/** What Fargate itself puts in every container's environment (the metadata endpoint is not emulated). */
const fargateEnv = (region: string): Record<string, string> => ({
  AWS_EXECUTION_ENV: 'AWS_ECS_FARGATE',
  AWS_REGION: region,
  AWS_DEFAULT_REGION: region,
});

/**
 * The container's environment as the ECS agent builds it: Fargate's own
 * variables, the task definition's `environment`, the override's
 * `environment` on top, then each `secrets` entry fetched from Secrets
 * Manager. A name given twice is an error on ECS (RegisterTaskDefinition
 * refuses it), so the order only matters between a definition and its override.
 *
 * `host` is what the stand-in's process needs that an image would carry
 * (PATH to find node and ansible-playbook, HOME); it goes underneath, so the
 * task's own values win.
 */
export async function containerEnvironment(options: {
  readonly definition: ContainerDefinition;
  readonly override: ContainerOverride | undefined;
  readonly secretsManager: SecretsManagerClient;
  readonly region: string;
  readonly host: Readonly<Record<string, string>>;
}): Promise<Record<string, string>> {
  const env: Record<string, string> = { ...options.host, ...fargateEnv(options.region) };
  for (const list of [options.definition.environment, options.override?.environment]) {
    for (const { name, value } of list ?? []) {
      if (name !== undefined) env[name] = value ?? '';
    }
  }
  for (const { name, valueFrom } of options.definition.secrets ?? []) {
    if (name === undefined || valueFrom === undefined)
      throw new SecretFetchError('a secret without name or valueFrom');
    env[name] = await secretValue(options.secretsManager, valueFrom);
  }
  return env;
}
