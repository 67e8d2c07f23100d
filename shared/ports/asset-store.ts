import type { StorageBackend } from '../domain/asset-access.ts';

/**
 * Where playbooks, scripts and packages live. Paths are relative to the
 * store's root; a path that escapes the root is refused with AssetOutsideRootError.
 *
 * @example
 * const where = await assets.locate('hello/site.yml'); // { kind: 'file', path: '/…/hello/site.yml' }
 * const { asset } = await assets.put('tools/setup.sh', bytes); // AssetExistsError if it exists
 * const url = await assets.grantRead?.('hello/site.yml', 900); // https://…?X-Amz-Signature=… for a remote task
 */
export type AssetLocation =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'url'; readonly url: string };

export interface AssetInfo {
  readonly path: string;
  readonly size: number;
  readonly type: 'playbook' | 'script' | 'powershell' | 'rpm' | 'deb' | 'other';
}

export interface AssetStore {
  /** Which storage backend this is (`local`, `s3`, `azure_blob`, `gcs`). */
  readonly backend: StorageBackend;
  /** Throws AssetOutsideRootError / AssetNotFoundError. */
  locate(path: string): Promise<AssetLocation>;
  list(): Promise<readonly AssetInfo[]>;
  /**
   * A short-lived https URL that reads exactly this asset and nothing else (S3
   * presigned GET, Azure read SAS, GCS V4 signed URL), for a task that runs
   * somewhere this store's credentials are not. Signed locally where the
   * credential allows it. Absent on stores a remote task cannot reach (the
   * local filesystem). The URL is a capability: never log it or store it.
   * Makes no existence check (the run's submit made it with `locate`): an
   * asset removed since fails in the task, which reports the HTTP 404.
   * Throws AssetOutsideRootError for a path outside the root, like `locate`.
   */
  readonly grantRead?: (path: string, ttlSeconds: number) => Promise<string>;
  /** The asset's bytes, on stores whose assets must be copied before a remote task can read them. */
  readonly read?: (path: string) => Promise<Uint8Array>;
  /**
   * Store `bytes` at `path` (rules: shared/domain/asset-path.ts). Readers see
   * the old content or the new, never a part. Without `overwrite`, an existing
   * asset is left alone and AssetExistsError thrown; the check and the write
   * are one atomic step (no-clobber create, S3 `If-None-Match: *`).
   * Throws AssetOutsideRootError / ValidationError for a bad path.
   */
  put(path: string, bytes: Uint8Array, options?: PutAssetOptions): Promise<PutAssetResult>;
}

export interface PutAssetOptions {
  /** Replace an existing asset (default false). */
  readonly overwrite?: boolean;
}

export interface PutAssetResult {
  readonly asset: AssetInfo;
  /** True when an existing asset was replaced. */
  readonly replaced: boolean;
}
