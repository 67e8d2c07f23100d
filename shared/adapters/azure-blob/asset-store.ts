import {
  BlobSASPermissions,
  type ContainerClient,
  SASProtocol,
  StorageSharedKeyCredential,
  type UserDelegationKey,
} from '@azure/storage-blob';
import { AssetNotFoundError, LaunchRejectedError } from '../../domain/errors.ts';
import type * as port from '../../ports/asset-store.ts';
import { collectAssets, type ListingLimits, listingLimits } from '../object-store/listing.ts';
import { normalizePrefix, objectNameFor } from '../object-store/naming.ts';
import { putObject } from '../object-store/put-object.ts';

/** HTTP status of a RestError (duck-typed: several copies of @azure/core-rest-pipeline may be installed). */
const statusOf = (error: unknown): number | undefined => {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' ? status : undefined;
};

export interface AzureBlobAssetStoreOptions {
  /**
   * The container the assets live in, with its credential already attached
   * (`new BlobServiceClient(url, credential).getContainerClient(name)`).
   */
  readonly container: ContainerClient;
  /**
   * For read SASs when the container's credential is not the account key (an
   * Entra ID identity): fetch a user delegation key valid over the interval
   * (`BlobServiceClient.getUserDelegationKey`; the identity needs
   * Microsoft.Storage/…/generateUserDelegationKey, as Storage Blob Delegator has).
   */
  readonly userDelegationKey?: (startsOn: Date, expiresOn: Date) => Promise<UserDelegationKey>;
  /** Blob-name prefix the asset root lives under (`playbooks/` …); empty for the container root. */
  readonly prefix?: string;
  readonly maxEntries?: number;
  /** Blobs per List Blobs page (`maxresults`; Azure's default and maximum is 5,000). */
  readonly pageSize?: number;
}

/**
 * AssetStore over an Azure Blob Storage container and prefix, with the same
 * rules as S3AssetStore: paths are relative to the prefix; absolute paths and
 * `..` segments are refused with AssetOutsideRootError before any request;
 * hidden segments are treated as absent.
 *
 * `locate` answers `{ kind: 'url', url }` with the blob's plain URL after a
 * Get Blob Properties (HEAD) proves it exists. That URL carries no
 * credential; `grantRead` answers it with a read-only SAS for that one blob,
 * signed with the account key when the container was built with it
 * (StorageSharedKeyCredential, computed locally) or else with a user
 * delegation key (`userDelegationKey`, one request).
 *
 * `put` is one Put Blob, so readers see the old blob or the new one; without
 * `overwrite` it sends `If-None-Match: *` and Azure itself refuses to replace
 * an existing blob (409 BlobAlreadyExists, or 412 → AssetExistsError).
 *
 * @example
 * const container = new BlobServiceClient(accountUrl, credential).getContainerClient('rw-assets');
 * const assets = new AzureBlobAssetStore({ container, prefix: 'playbooks/' });
 * await assets.locate('hello/site.yml'); // { kind: 'url', url: 'https://<account>.blob.core.windows.net/rw-assets/playbooks/hello/site.yml' }
 * await assets.put('tools/setup.sh', bytes); // AssetExistsError when it is already there
 */
export class AzureBlobAssetStore implements port.AssetStore {
  readonly backend = 'azure_blob' as const;
  readonly #container: ContainerClient;
  readonly #prefix: string;
  readonly #limits: ListingLimits;

  readonly #userDelegationKey: AzureBlobAssetStoreOptions['userDelegationKey'];

  constructor(options: AzureBlobAssetStoreOptions) {
    this.#container = options.container;
    this.#userDelegationKey = options.userDelegationKey;
    this.#prefix = normalizePrefix(options.prefix);
    this.#limits = listingLimits(options);
  }

  async locate(path: string): Promise<port.AssetLocation> {
    const name = objectNameFor(this.#prefix, path);
    const blob = this.#container.getBlobClient(name);
    try {
      await blob.getProperties();
    } catch (error) {
      // HEAD has no body: BlobNotFound and ContainerNotFound both arrive as a bare 404,
      // so a wrong container name reads as "asset not found" (as a wrong S3 bucket does).
      if (statusOf(error) === 404) {
        throw new AssetNotFoundError(`Asset "${path}" does not exist`, { cause: error });
      }
      throw error;
    }
    return { kind: 'url', url: blob.url };
  }

  /**
   * Signs a read-only SAS for the blob, with no existence check: the run's
   * submit checked it (`locate`); one removed since fails in the task (HTTP 404).
   */
  readonly grantRead = async (path: string, ttlSeconds: number): Promise<string> => {
    const blob = this.#container.getBlobClient(objectNameFor(this.#prefix, path));
    // Clock skew between here and Azure would make a SAS starting "now" not yet valid.
    const startsOn = new Date(Date.now() - 5 * 60_000);
    const expiresOn = new Date(Date.now() + ttlSeconds * 1000);
    const options = {
      permissions: BlobSASPermissions.parse('r'),
      startsOn,
      expiresOn,
      // https only, except against a plain-http emulator.
      protocol: blob.url.startsWith('https:') ? SASProtocol.Https : SASProtocol.HttpsAndHttp,
    };
    if (blob.credential instanceof StorageSharedKeyCredential) return blob.generateSasUrl(options);
    if (this.#userDelegationKey !== undefined) {
      return blob.generateUserDelegationSasUrl(options, await this.#userDelegationKey(startsOn, expiresOn));
    }
    throw new LaunchRejectedError(
      'Cannot sign a read SAS for the asset: the Azure Blob store has neither the account key nor a way to get a user delegation key',
    );
  };

  put(path: string, bytes: Uint8Array, options?: port.PutAssetOptions): Promise<port.PutAssetResult> {
    return putObject(path, bytes, options, () => {
      const blob = this.#container.getBlockBlobClient(this.#prefix + path);
      return {
        exists: () => blob.exists(),
        write: async (overwrite) => {
          await blob.upload(bytes, bytes.byteLength, overwrite ? {} : { conditions: { ifNoneMatch: '*' } });
        },
        // 409 BlobAlreadyExists is Azure's answer to `If-None-Match: *` on an existing blob;
        // 412 ConditionNotMet is accepted too, should a proxy or API version answer that way.
        isConflict: (error) => {
          const status = statusOf(error);
          return status === 409 || status === 412;
        },
      };
    });
  }

  /**
   * Every blob under the prefix that `locate` would serve, sorted by path, at
   * most `maxEntries` (10,000 by default). Folder markers (names ending in
   * `/`, as left by some tools on hierarchical-namespace accounts) are skipped.
   */
  async list(): Promise<readonly port.AssetInfo[]> {
    const pages = this.#container
      .listBlobsFlat(this.#prefix === '' ? {} : { prefix: this.#prefix })
      .byPage(this.#limits.pageSize === undefined ? {} : { maxPageSize: this.#limits.pageSize });
    async function* objects() {
      for await (const page of pages) {
        yield page.segment.blobItems.map((item) => ({
          key: item.name,
          size: item.properties.contentLength ?? 0,
        }));
      }
    }
    return collectAssets(this.#prefix, this.#limits.maxEntries, objects());
  }
}
