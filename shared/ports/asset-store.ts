/**
 * Where playbooks, scripts and packages live. Paths are relative to the
 * store's root; a path that escapes the root is refused with AssetOutsideRootError.
 *
 * @example
 * const where = await assets.locate('hello/site.yml'); // { kind: 'file', path: '/…/hello/site.yml' }
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
}
