import { googleError, isAlreadyExists, isNotFound } from './errors.ts';
import { type AuthorizedHttp, baseUrl, type RetryTuning, retrying } from './google-http.ts';

const SERVICE = 'Secret Manager';
const LIST_PAGE_SIZE = 100;
/** Secret ids: letters, digits, `_` and `-`, at most 255. */
const SECRET_ID = /^[A-Za-z0-9_-]{1,255}$/;

export interface EphemeralSecretsOptions {
  readonly http: AuthorizedHttp;
  readonly project: string;
  /** Default `https://secretmanager.googleapis.com`; tests point it at a fake. */
  readonly endpoint?: string;
  /**
   * Locations for user-managed replication, where an organisation policy
   * forbids automatic replication; automatic replication when absent.
   */
  readonly replicationLocations?: readonly string[];
  readonly retry?: RetryTuning;
}

interface SecretList {
  readonly secrets?: readonly { readonly name?: string }[];
  readonly nextPageToken?: string;
}

/**
 * Per-run Secret Manager secrets, for secret material minted for one run (a
 * token-prepared kubeconfig, a checked-out password) that no stored secret
 * holds: Cloud Run env can only reference Secret Manager, never carry a value
 * safely (a plain `value` is readable by anyone who can view the job).
 *
 * Each secret carries the run's labels, so cleanup finds them by label even
 * after the job is gone, and a TTL, so Secret Manager deletes one that cleanup
 * never reached. The value travels in exactly one request, `addVersion`, as
 * base64 `payload.data`; errors from that call quote neither Google's words
 * nor the original error (whose `config` holds the request body).
 *
 * @example
 * const secrets = new EphemeralSecrets({ http: auth, project: 'my-project' });
 * await secrets.put('rw-01jd…-a1-KUBECONFIG', kubeconfig, { remote_worker_job: 'rw-01jd…-a1' }, 7200);
 * for (const id of await secrets.listByLabel('remote_worker_job', 'rw-01jd…-a1')) await secrets.delete(id);
 */
export class EphemeralSecrets {
  readonly #o: EphemeralSecretsOptions;
  readonly #base: string;

  constructor(options: EphemeralSecretsOptions) {
    this.#o = options;
    this.#base = `${baseUrl(options.endpoint ?? 'https://secretmanager.googleapis.com')}/v1/projects/${encodeURIComponent(options.project)}/secrets`;
  }

  /**
   * Creates the secret (an existing one is reused: a redelivery of the same
   * launch) and adds `value` as its newest version, which `latest` then names.
   */
  async put(
    secretId: string,
    value: string,
    labels: Readonly<Record<string, string>>,
    ttlSeconds: number,
  ): Promise<void> {
    if (!SECRET_ID.test(secretId)) throw new RangeError(`${secretId} is not a Secret Manager secret id`);
    const locations = this.#o.replicationLocations ?? [];
    try {
      await retrying(
        () =>
          this.#o.http.request({
            url: `${this.#base}?secretId=${encodeURIComponent(secretId)}`,
            method: 'POST',
            data: {
              replication:
                locations.length === 0
                  ? { automatic: {} }
                  : { userManaged: { replicas: locations.map((location) => ({ location })) } },
              labels,
              ttl: `${Math.max(1, Math.ceil(ttlSeconds))}s`,
            },
          }),
        this.#o.retry,
      );
    } catch (error) {
      if (!isAlreadyExists(error)) throw googleError(error, SERVICE, `CreateSecret ${secretId}`);
    }
    try {
      // A retry after a lost answer adds the same value twice; `latest` is the same either way.
      await retrying(
        () =>
          this.#o.http.request({
            url: `${this.#base}/${encodeURIComponent(secretId)}:addVersion`,
            method: 'POST',
            data: { payload: { data: Buffer.from(value, 'utf8').toString('base64') } },
          }),
        this.#o.retry,
      );
    } catch (error) {
      throw googleError(error, SERVICE, `AddSecretVersion ${secretId}`, { quote: false });
    }
  }

  /** Ids of the secrets carrying label `key=value`. */
  async listByLabel(key: string, value: string): Promise<string[]> {
    const ids: string[] = [];
    const filter = encodeURIComponent(`labels.${key}=${value}`);
    let pageToken: string | undefined;
    do {
      const token = pageToken === undefined ? '' : `&pageToken=${encodeURIComponent(pageToken)}`;
      let page: SecretList;
      try {
        ({ data: page } = await retrying(
          () =>
            this.#o.http.request<SecretList>({
              url: `${this.#base}?filter=${filter}&pageSize=${LIST_PAGE_SIZE}${token}`,
              method: 'GET',
            }),
          this.#o.retry,
        ));
      } catch (error) {
        throw googleError(error, SERVICE, 'ListSecrets');
      }
      for (const s of page.secrets ?? []) {
        const id = s.name?.split('/').at(-1);
        if (id !== undefined && id !== '') ids.push(id);
      }
      pageToken = page.nextPageToken === '' ? undefined : page.nextPageToken;
    } while (pageToken !== undefined);
    return ids;
  }

  /** Deletes the secret and all its versions; one that is already gone is fine. */
  async delete(secretId: string): Promise<void> {
    try {
      await retrying(
        () =>
          this.#o.http.request({ url: `${this.#base}/${encodeURIComponent(secretId)}`, method: 'DELETE' }),
        this.#o.retry,
      );
    } catch (error) {
      if (!isNotFound(error)) throw googleError(error, SERVICE, `DeleteSecret ${secretId}`);
    }
  }
}
