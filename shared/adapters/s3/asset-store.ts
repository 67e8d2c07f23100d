import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { AssetNotFoundError, ValidationError } from '../../domain/errors.ts';
import { once } from '../../lib/once.ts';
import type * as port from '../../ports/asset-store.ts';
import { collectAssets, type ListingLimits, listingLimits } from '../object-store/listing.ts';
import { normalizePrefix, objectNameFor } from '../object-store/naming.ts';
import { putObject } from '../object-store/put-object.ts';

/** One client per cold start, shared by every store built without an injected client. */
const defaultClient = once((): S3Client => new S3Client({}));

export interface S3AssetStoreOptions {
  readonly bucket: string;
  /** Key prefix the asset root lives under (`assets/` …); empty for the bucket root. */
  readonly prefix?: string;
  /** Defaults to one client per process, configured from the environment (AWS_REGION, AWS_ENDPOINT_URL …). */
  readonly client?: S3Client;
  readonly maxEntries?: number;
  /** Keys per ListObjectsV2 page (S3's default and maximum is 1,000). */
  readonly pageSize?: number;
}

/**
 * AssetStore over an S3 bucket and prefix. Paths are relative to the prefix;
 * absolute paths and `..` segments are refused with AssetOutsideRootError
 * (S3 keys are plain strings, so nothing is normalised: `a/./b` and hidden
 * segments are treated as absent, as LocalAssetStore does).
 *
 * `locate` answers `{ kind: 'url', url: 's3://<bucket>/<key>' }` after a HEAD
 * proves the object exists; `grantRead` answers a presigned GET URL for that
 * one key, which any task can fetch over https without AWS credentials.
 * Presigning is local (no request, no existence check: submit made it); the URL stops working at its expiry or
 * when the signing credentials expire, whichever comes first (a Lambda role's
 * session lasts as long as the function's).
 *
 * `put` is one PutObject, so readers see the old object or the new one;
 * without `overwrite` it sends `If-None-Match: *` and S3 itself refuses to
 * replace an existing key (412 → AssetExistsError).
 *
 * @example
 * const assets = new S3AssetStore({ bucket: 'rw-assets', prefix: 'playbooks/' });
 * await assets.locate('hello/site.yml'); // { kind: 'url', url: 's3://rw-assets/playbooks/hello/site.yml' }
 * await assets.grantRead('hello/site.yml', 900); // https://rw-assets.s3.…/playbooks/hello/site.yml?X-Amz-Signature=…
 * await assets.put('tools/setup.sh', bytes); // AssetExistsError when it is already there
 */
export class S3AssetStore implements port.AssetStore {
  readonly backend = 's3' as const;
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #limits: ListingLimits;

  constructor(options: S3AssetStoreOptions) {
    if (options.bucket.length === 0) throw new ValidationError('bucket must not be empty');
    this.#client = options.client ?? defaultClient();
    this.#bucket = options.bucket;
    this.#prefix = normalizePrefix(options.prefix);
    this.#limits = listingLimits(options);
  }

  async locate(path: string): Promise<port.AssetLocation> {
    const key = objectNameFor(this.#prefix, path);
    try {
      await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
    } catch (error) {
      // HEAD has no body, so a missing key arrives as NotFound (404), not NoSuchKey — as does a missing bucket.
      const name = error instanceof Error ? error.name : '';
      if (name === 'NotFound' || name === 'NoSuchKey') {
        throw new AssetNotFoundError(`Asset "${path}" does not exist`, { cause: error });
      }
      throw error;
    }
    return { kind: 'url', url: `s3://${this.#bucket}/${key}` };
  }

  /**
   * Presigns a GET for the key, locally: no request. The run's submit checked
   * the asset exists (`locate`); one removed since fails in the task (HTTP 404).
   */
  readonly grantRead = async (path: string, ttlSeconds: number): Promise<string> => {
    const key = objectNameFor(this.#prefix, path);
    return getSignedUrl(this.#client, new GetObjectCommand({ Bucket: this.#bucket, Key: key }), {
      expiresIn: ttlSeconds,
    });
  };

  put(path: string, bytes: Uint8Array, options?: port.PutAssetOptions): Promise<port.PutAssetResult> {
    return putObject(path, bytes, options, () => {
      const key = this.#prefix + path;
      return {
        exists: () => this.#exists(key),
        write: async (overwrite) => {
          await this.#client.send(
            new PutObjectCommand({
              Bucket: this.#bucket,
              Key: key,
              Body: bytes,
              ContentLength: bytes.byteLength,
              ...(overwrite ? {} : { IfNoneMatch: '*' }),
            }),
          );
        },
        // 412: the key exists. 409: a concurrent conditional write to the same key won the race.
        isConflict: (error) => {
          const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
          return status === 412 || status === 409;
        },
      };
    });
  }

  /**
   * Every object under the prefix that `locate` would serve, sorted by path,
   * at most `maxEntries` (10,000 by default). Folder markers (keys ending in
   * `/`) are skipped.
   */
  async list(): Promise<readonly port.AssetInfo[]> {
    const client = this.#client;
    const [bucket, prefix, pageSize] = [this.#bucket, this.#prefix, this.#limits.pageSize];
    async function* pages() {
      let token: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            ...(prefix === '' ? {} : { Prefix: prefix }),
            ...(token === undefined ? {} : { ContinuationToken: token }),
            ...(pageSize === undefined ? {} : { MaxKeys: pageSize }),
          }),
        );
        yield (page.Contents ?? []).flatMap((o) =>
          o.Key === undefined ? [] : [{ key: o.Key, size: o.Size ?? 0 }],
        );
        token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
    }
    return collectAssets(prefix, this.#limits.maxEntries, pages());
  }

  async #exists(key: string): Promise<boolean> {
    try {
      await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
      return true;
    } catch (error) {
      if (error instanceof Error && (error.name === 'NotFound' || error.name === 'NoSuchKey')) return false;
      throw error;
    }
  }
}
