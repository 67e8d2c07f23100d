import type { PutAssetOptions, PutAssetResult } from '../../ports/asset-store.ts';
import { assetExists } from './listing.ts';
import { checkUploadPath, uploaded } from './naming.ts';

/** One object of a store, as `putObject` writes it. */
export interface ObjectUpload {
  /** Whether the object is there now: asked only with `overwrite`, to report `replaced`. */
  exists(): Promise<boolean>;
  /** One write of the whole object; without `overwrite`, conditional, so the store itself refuses to replace it. */
  write(overwrite: boolean): Promise<void>;
  /** Whether a failed conditional write means the object exists (the store's status for it). */
  isConflict(error: unknown): boolean;
}

/**
 * `put` as S3, Cloud Storage and Azure Blob share it: refuse a path no store
 * takes, write once (readers see the old object or the new one), map the
 * store's refusal of a no-clobber write to AssetExistsError. `open` names the
 * object only after the path passed.
 *
 * @example
 * return putObject(path, bytes, options, () => ({ exists, write, isConflict: (e) => statusOf(e) === 412 }));
 */
export async function putObject(
  path: string,
  bytes: Uint8Array,
  options: PutAssetOptions | undefined,
  open: () => ObjectUpload,
): Promise<PutAssetResult> {
  checkUploadPath(path);
  const object = open();
  const overwrite = options?.overwrite === true;
  // Only to report `replaced`; the write itself does not depend on it.
  const replaced = overwrite && (await object.exists());
  try {
    await object.write(overwrite);
  } catch (error) {
    if (!overwrite && object.isConflict(error)) throw assetExists(path, error);
    throw error;
  }
  return uploaded(path, bytes, replaced);
}
