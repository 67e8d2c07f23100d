import {
  CreateSecretCommand,
  DeleteSecretCommand,
  PutSecretValueCommand,
  ResourceExistsException,
  ResourceNotFoundException,
  type SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';

/** Where per-run values go, and how a backend refers to them. */
export interface RunSecrets {
  /** Store `value` for this run under `env`; returns what the backend resolves (an ARN). */
  put(runId: string, env: string, value: string): Promise<string>;
  /** Delete every value stored for the run; idempotent. */
  deleteFor(runId: string): Promise<void>;
}

export interface SecretsManagerRunSecretsOptions {
  readonly client: SecretsManagerClient;
  /** Name prefix, e.g. `remote-worker/dev/runs/`; the stack grants create/delete under it only. */
  readonly prefix: string;
  /** Env names a run may have minted values for; `deleteFor` tries each (default KUBECONFIG, RW_DB_PASSWORD). */
  readonly envs?: readonly string[];
}

/**
 * Per-run Secrets Manager secrets for material minted at launch — a
 * token-prepared kubeconfig, a checked-out database password — which no
 * stored secret holds, yet which an ECS task may only receive through a
 * `valueFrom` reference (a value in the overrides is readable through
 * DescribeTasks and CloudTrail). Named `<prefix><runId>/<env>`, tagged with
 * the run id, deleted without a recovery window when the run ends.
 *
 * The value travels in one request body (CreateSecret or PutSecretValue) and
 * never in an error: messages name the secret and the service's error code.
 *
 * @example
 * const arn = await runSecrets.put(run.id, 'KUBECONFIG', kubeconfig);
 * await runSecrets.deleteFor(run.id);
 */
export class SecretsManagerRunSecrets implements RunSecrets {
  readonly #o: SecretsManagerRunSecretsOptions;

  constructor(options: SecretsManagerRunSecretsOptions) {
    this.#o = options;
  }

  #name(runId: string, env: string): string {
    return `${this.#o.prefix}${runId}/${env}`;
  }

  async put(runId: string, env: string, value: string): Promise<string> {
    const name = this.#name(runId, env);
    try {
      const created = await this.#o.client.send(
        new CreateSecretCommand({
          Name: name,
          SecretString: value,
          Description: `Minted for remote-worker run ${runId}; deleted when the run ends`,
          Tags: [{ Key: 'remote-worker:run-id', Value: runId }],
        }),
      );
      if (created.ARN !== undefined) return created.ARN;
      throw new LauncherUnavailableError(`Secrets Manager CreateSecret returned no ARN for ${name}`);
    } catch (error) {
      if (!(error instanceof ResourceExistsException)) throw secretsError(error, 'CreateSecret', name);
    }
    // A redelivered launch: the secret exists; give it this launch's value.
    try {
      const updated = await this.#o.client.send(
        new PutSecretValueCommand({ SecretId: name, SecretString: value }),
      );
      if (updated.ARN !== undefined) return updated.ARN;
      throw new LauncherUnavailableError(`Secrets Manager PutSecretValue returned no ARN for ${name}`);
    } catch (error) {
      throw secretsError(error, 'PutSecretValue', name);
    }
  }

  async deleteFor(runId: string): Promise<void> {
    for (const env of this.#o.envs ?? ['KUBECONFIG', 'RW_DB_PASSWORD']) {
      const name = this.#name(runId, env);
      try {
        await this.#o.client.send(
          new DeleteSecretCommand({ SecretId: name, ForceDeleteWithoutRecovery: true }),
        );
      } catch (error) {
        if (error instanceof ResourceNotFoundException) continue;
        throw secretsError(error, 'DeleteSecret', name);
      }
    }
  }
}

function secretsError(error: unknown, action: string, name: string): Error {
  if (error instanceof LauncherUnavailableError || error instanceof LaunchRejectedError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as {
    name?: string;
    $metadata?: { httpStatusCode?: number };
  };
  const status = e.$metadata?.httpStatusCode;
  const what = `Secrets Manager ${action} on ${name} failed (${e.name ?? 'Error'})`;
  // No `cause`: the SDK error carries the request, and the request carries the value.
  return status === undefined || status >= 500 || status === 429 || /Throttl/.test(e.name ?? '')
    ? new LauncherUnavailableError(`${what}, will retry`)
    : new LaunchRejectedError(what);
}
