/**
 * Where playbooks, scripts and packages live. Paths are relative to the
 * store's root; a path that escapes the root is refused with AssetOutsideRootError.
 *
 * @example
 * const where = await assets.locate('hello/site.yml'); // { kind: 'file', path: '/…/hello/site.yml' }
 * const { asset } = await assets.put('tools/setup.sh', bytes); // AssetExistsError if it exists
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
  /** Throws AssetOutsideRootError / AssetNotFoundError. */
  locate(path: string): Promise<AssetLocation>;
  list(): Promise<readonly AssetInfo[]>;
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
