import {
  CreateSecretCommand,
  DeleteSecretCommand,
  PutSecretValueCommand,
  ResourceExistsException,
  ResourceNotFoundException,
  type SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import type { RunSecretStore } from '../../ports/run-secret-store.ts';

/** Where per-run values go, and how a backend refers to them. */
export interface RunSecrets {
  /** Store `value` for this run under `env`; returns what the backend resolves (an ARN). */
  put(runId: string, env: string, value: string): Promise<string>;
  /** Delete the values stored for the run (under `envs`, default the launcher's minted ones); idempotent. */
  deleteFor(runId: string, envs?: readonly string[]): Promise<void>;
}

export interface SecretsManagerRunSecretsOptions {
  readonly client: SecretsManagerClient;
  /** Name prefix, e.g. `remote-worker/dev/runs/`; the stack grants create/delete under it only. */
  readonly prefix: string;
  /** Env names a run may have minted values for; `deleteFor` tries each (default KUBECONFIG, RW_DB_PASSWORD, RW_VM_PASSWORD). */
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

  /** The secret's name: `<prefix><runId>/<env>`. */
  nameFor(runId: string, env: string): string {
    return `${this.#o.prefix}${runId}/${env}`;
  }

  /** True for a name under this store's prefix. */
  owns(name: string): boolean {
    return name.startsWith(this.#o.prefix);
  }

  #name(runId: string, env: string): string {
    return this.nameFor(runId, env);
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

  async deleteFor(runId: string, envs?: readonly string[]): Promise<void> {
    for (const env of envs ?? this.#o.envs ?? ['KUBECONFIG', 'RW_DB_PASSWORD', 'RW_VM_PASSWORD']) {
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

/**
 * The per-run secrets of plaintext passwords sent at submit, over the same
 * Secrets Manager prefix: the run record binds the secret's name (not its
 * ARN, so a relay scoped to the secrets prefix resolves it), and the secret
 * is deleted without a recovery window when the run ends.
 *
 * @example
 * const runSecrets = submittedRunSecrets(new SecretsManagerRunSecrets({ client, prefix: 'remote-worker/dev/runs/' }));
 * const name = await runSecrets.put(runId, 'ansible_password', value); // 'remote-worker/dev/runs/<runId>/ansible_password'
 */
export function submittedRunSecrets(store: SecretsManagerRunSecrets): RunSecretStore {
  return {
    put: async (runId, key, value) => {
      await store.put(runId, key, value);
      return store.nameFor(runId, key);
    },
    deleteFor: (runId, keys) => (keys.length === 0 ? Promise.resolve() : store.deleteFor(runId, keys)),
    owns: (name) => store.owns(name),
  };
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
