import { type Bucket, Storage } from '@google-cloud/storage';
import { AssetNotFoundError, ValidationError } from '../../domain/errors.ts';
import { once } from '../../lib/once.ts';
import type * as port from '../../ports/asset-store.ts';
import { collectAssets, type ListingLimits, listingLimits } from '../object-store/listing.ts';
import { normalizePrefix, objectNameFor } from '../object-store/naming.ts';
import { putObject } from '../object-store/put-object.ts';

/** One client per cold start, shared by every store built without an injected one (Application Default Credentials). */
const defaultStorage = once((): Storage => new Storage());

/** HTTP status of an ApiError from the SDK (`code` holds the status for JSON API errors). */
const statusOf = (error: unknown): number | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
};

export interface GcsAssetStoreOptions {
  readonly bucket: string;
  /** Object-name prefix the asset root lives under (`playbooks/` …); empty for the bucket root. */
  readonly prefix?: string;
  /** Defaults to one client per process using Application Default Credentials. */
  readonly storage?: Storage;
  readonly maxEntries?: number;
  /** Objects per objects.list page (`maxResults`; the API's default and maximum is 1,000). */
  readonly pageSize?: number;
}

/**
 * AssetStore over a Cloud Storage bucket and prefix, with the same rules as
 * S3AssetStore: paths are relative to the prefix; absolute paths and `..`
 * segments are refused with AssetOutsideRootError before any request; hidden
 * segments are treated as absent.
 *
 * `locate` answers `{ kind: 'url', url: 'gs://<bucket>/<name>' }` after an
 * objects.get (metadata only) proves the object exists; `grantRead` answers a
 * V4 signed GET URL for that one object. Signing needs a credential that can
 * sign: a service account key signs locally; otherwise the SDK asks the IAM
 * Credentials API to sign (the identity needs iam.serviceAccounts.signBlob
 * on itself, roles/iam.serviceAccountTokenCreator).
 *
 * `put` is one single-shot (multipart) upload, so readers see the old object
 * or the new one; without `overwrite` it sends `ifGenerationMatch=0` and
 * Cloud Storage itself refuses to replace a live object (412 → AssetExistsError).
 *
 * @example
 * const assets = new GcsAssetStore({ bucket: 'rw-assets', prefix: 'playbooks/' });
 * await assets.locate('hello/site.yml'); // { kind: 'url', url: 'gs://rw-assets/playbooks/hello/site.yml' }
 * await assets.put('tools/setup.sh', bytes); // AssetExistsError when it is already there
 */
export class GcsAssetStore implements port.AssetStore {
  readonly backend = 'gcs' as const;
  readonly #bucket: Bucket;
  readonly #prefix: string;
  readonly #limits: ListingLimits;

  constructor(options: GcsAssetStoreOptions) {
    if (options.bucket.length === 0) throw new ValidationError('bucket must not be empty');
    this.#bucket = (options.storage ?? defaultStorage()).bucket(options.bucket);
    this.#prefix = normalizePrefix(options.prefix);
    this.#limits = listingLimits(options);
  }

  async locate(path: string): Promise<port.AssetLocation> {
    const name = objectNameFor(this.#prefix, path);
    try {
      await this.#bucket.file(name).getMetadata();
    } catch (error) {
      // A missing bucket is a 404 too, so a wrong bucket name reads as "asset not found" (as in S3).
      if (statusOf(error) === 404) {
        throw new AssetNotFoundError(`Asset "${path}" does not exist`, { cause: error });
      }
      throw error;
    }
    return { kind: 'url', url: `gs://${this.#bucket.name}/${name}` };
  }

  /**
   * Signs a V4 read URL for the object, with no existence check: the run's
   * submit checked it (`locate`); one removed since fails in the task (HTTP 404).
   */
  readonly grantRead = async (path: string, ttlSeconds: number): Promise<string> => {
    const [url] = await this.#bucket.file(objectNameFor(this.#prefix, path)).getSignedUrl({
      version: 'v4',
      action: 'read',
      expires: Date.now() + ttlSeconds * 1000,
    });
    return url;
  };

  put(path: string, bytes: Uint8Array, options?: port.PutAssetOptions): Promise<port.PutAssetResult> {
    return putObject(path, bytes, options, () => {
      const file = this.#bucket.file(this.#prefix + path);
      return {
        exists: async () => (await file.exists())[0],
        // Single-shot upload: assets are small, and a resumable session would add a round trip.
        write: (overwrite) =>
          file.save(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), {
            resumable: false,
            ...(overwrite ? {} : { preconditionOpts: { ifGenerationMatch: 0 } }),
          }),
        isConflict: (error) => statusOf(error) === 412,
      };
    });
  }

  /**
   * Every object under the prefix that `locate` would serve, sorted by path,
   * at most `maxEntries` (10,000 by default). Folder placeholders (names
   * ending in `/`, as the console creates) are skipped.
   */
  async list(): Promise<readonly port.AssetInfo[]> {
    const [bucket, prefix, pageSize] = [this.#bucket, this.#prefix, this.#limits.pageSize];
    async function* pages() {
      let pageToken: string | undefined;
      do {
        const [files, next] = await bucket.getFiles({
          autoPaginate: false,
          ...(prefix === '' ? {} : { prefix }),
          ...(pageSize === undefined ? {} : { maxResults: pageSize }),
          ...(pageToken === undefined ? {} : { pageToken }),
        });
        yield files.map((file) => ({ key: file.name, size: Number(file.metadata.size ?? 0) }));
        // The SDK answers null (despite its type) for the query after the last page.
        pageToken = (next as { pageToken?: string } | null | undefined)?.pageToken || undefined;
      } while (pageToken !== undefined);
    }
    return collectAssets(prefix, this.#limits.maxEntries, pages());
  }
}
