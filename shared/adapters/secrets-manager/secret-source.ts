import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { NotFoundError } from '../../domain/errors.ts';
import { once } from '../../lib/once.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import type { SecretSource } from '../../ports/secret-source.ts';

const DEFAULT_TTL_SECONDS = 60;

interface Entry {
  readonly value: Promise<string>;
  readonly expiresAtMs: number;
}

/** One client per cold start, shared by every source built without an injected client. */
const defaultClient = once((): SecretsManagerClient => new SecretsManagerClient({}));

export interface SecretsManagerSecretSourceOptions {
  /** Defaults to one client per process, configured from the environment (AWS_REGION, AWS_ENDPOINT_URL …). */
  readonly client?: SecretsManagerClient;
  /** How long a value is reused before it is fetched again (default 60 s; 0 turns the cache off). */
  readonly ttlSeconds?: number;
  readonly clock?: Clock;
}

/**
 * SecretSource over AWS Secrets Manager: the secret's current version
 * (AWSCURRENT), by name or ARN. A value is cached in memory for a short TTL so
 * a batch of runs naming the same secret costs one call, while a rotation is
 * picked up within the TTL. Concurrent reads of one name share one request;
 * failures are not cached.
 *
 * Values never appear in an error or a log: errors name the secret only, and
 * this adapter logs nothing.
 *
 * @example
 * const secrets = new SecretsManagerSecretSource({ ttlSeconds: 60 });
 * const password = await secrets.get('prod/db-admin'); // NotFoundError naming the secret when absent
 */
export class SecretsManagerSecretSource implements SecretSource {
  readonly #client: SecretsManagerClient;
  readonly #ttlMs: number;
  readonly #clock: Clock;
  readonly #cache = new Map<string, Entry>();

  constructor(options: SecretsManagerSecretSourceOptions = {}) {
    this.#client = options.client ?? defaultClient();
    this.#ttlMs = (options.ttlSeconds ?? DEFAULT_TTL_SECONDS) * 1000;
    this.#clock = options.clock ?? systemClock;
  }

  get(name: string): Promise<string> {
    const now = this.#clock.nowMs();
    const cached = this.#cache.get(name);
    if (cached !== undefined && cached.expiresAtMs > now) return cached.value;

    const value = this.#fetch(name);
    if (this.#ttlMs > 0) {
      this.#cache.set(name, { value, expiresAtMs: now + this.#ttlMs });
      value.catch(() => {
        // Only drop our own entry: a newer fetch may have replaced it meanwhile.
        if (this.#cache.get(name)?.value === value) this.#cache.delete(name);
      });
    }
    return value;
  }

  async #fetch(name: string): Promise<string> {
    let answer: { SecretString?: string | undefined; SecretBinary?: Uint8Array | undefined };
    try {
      answer = await this.#client.send(new GetSecretValueCommand({ SecretId: name }));
    } catch (error) {
      if (error instanceof Error && error.name === 'ResourceNotFoundException') {
        throw new NotFoundError(`Secret "${name}" does not exist in AWS Secrets Manager`, { cause: error });
      }
      throw error;
    }
    if (answer.SecretString !== undefined) return answer.SecretString;
    if (answer.SecretBinary !== undefined) {
      try {
        return new TextDecoder('utf-8', { fatal: true }).decode(answer.SecretBinary);
      } catch {
        // The decoder's error does not quote the bytes, but say nothing about them either way.
        throw new Error(`Secret "${name}" holds binary data that is not UTF-8 text; store it as a string`);
      }
    }
    throw new NotFoundError(`Secret "${name}" has no value in its current version`);
  }
}
