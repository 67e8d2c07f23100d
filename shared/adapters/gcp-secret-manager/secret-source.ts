import { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { NotFoundError, ValidationError } from '../../domain/errors.ts';
import type { SecretSource } from '../../ports/secret-source.ts';

/** Secret Manager's own rule for a secret id. */
const SECRET_ID = /^[A-Za-z0-9_-]{1,255}$/;
/**
 * Not found, however it arrives: google-gax 5.0.8's REST transport over
 * google-auth-library 10 throws gaxios' error as is (HTTP `status` 404),
 * where a GoogleError would carry gRPC code 5.
 */
const isNotFound = (error: unknown): boolean => {
  const e = error as { code?: unknown; status?: unknown; response?: { status?: unknown } };
  return e.code === 5 || e.status === 404 || e.response?.status === 404;
};

export interface GcpSecretManagerSecretSourceOptions {
  /** The project holding the secrets (the `gcp_project_id` setting). */
  readonly project: string;
  /** Default: one client from the environment's Google credentials (REST transport). */
  readonly client?: SecretManagerServiceClient;
}

/**
 * SecretSource over GCP Secret Manager (`@google-cloud/secret-manager`, REST
 * transport): `projects/<project>/secrets/<name>/versions/latest`, decoded as
 * UTF-8 text. Nothing is cached: an SSH key is read once per run. A name
 * Secret Manager cannot hold is a ValidationError, before any request.
 *
 * Values never appear in an error or a log: errors name the secret and the
 * project only, and this adapter logs nothing.
 *
 * @example
 * const secrets = new GcpSecretManagerSecretSource({ project: 'acme-prod' });
 * const key = await secrets.get('ssh-ansible-keypair'); // NotFoundError naming the secret when absent
 */
export class GcpSecretManagerSecretSource implements SecretSource {
  readonly #client: SecretManagerServiceClient;

  constructor(private readonly options: GcpSecretManagerSecretSourceOptions) {
    this.#client = options.client ?? new SecretManagerServiceClient({ fallback: true });
  }

  async get(name: string): Promise<string> {
    const { project } = this.options;
    if (!SECRET_ID.test(name)) {
      throw new ValidationError(
        `Secret name "${name}" is not a valid GCP Secret Manager secret id: use letters, digits, "_" and "-" only (at most 255)`,
      );
    }
    let payload: Uint8Array | string | null | undefined;
    try {
      const [answer] = await this.#client.accessSecretVersion({
        name: `projects/${project}/secrets/${name}/versions/latest`,
      });
      payload = answer.payload?.data;
    } catch (error) {
      if (isNotFound(error)) {
        throw new NotFoundError(
          `Secret "${name}" (or an enabled version of it) does not exist in GCP Secret Manager project ${project}`,
          { cause: error },
        );
      }
      // gax errors carry Google's message, which names the resource, never a payload.
      throw new Error(`GCP Secret Manager secret "${name}" could not be read: ${(error as Error).message}`, {
        cause: error,
      });
    }
    if (payload === null || payload === undefined || payload.length === 0) {
      throw new NotFoundError(`Secret "${name}" has an empty latest version in GCP Secret Manager`);
    }
    if (typeof payload === 'string') return payload;
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(payload);
    } catch {
      throw new Error(`Secret "${name}" holds binary data that is not UTF-8 text; store it as text`);
    }
  }
}
