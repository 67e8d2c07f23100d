import { assetPathProblem, objectPathProblem } from '../../domain/asset-path.ts';
import { AssetNotFoundError, AssetOutsideRootError, ValidationError } from '../../domain/errors.ts';
import { assetTypeOf } from '../../domain/task.ts';
import type { PutAssetResult } from '../../ports/asset-store.ts';

/** The most assets a listing returns before it says it was cut (every store). */
export const DEFAULT_MAX_ENTRIES = 10_000;

/** S3 keys, Cloud Storage object names and blob names: at most 1,024 bytes (blob names count characters; bytes are the safe side). */
const MAX_OBJECT_NAME_BYTES = 1024;

/**
 * A store's prefix as its object names start: no leading slash, one trailing
 * slash unless empty (`'/playbooks'` → `'playbooks/'`).
 */
export function normalizePrefix(prefix: string | undefined): string {
  const trimmed = (prefix ?? '').replace(/^\/+/, '');
  return trimmed === '' || trimmed.endsWith('/') ? trimmed : `${trimmed}/`;
}

/**
 * The object name an asset path is served from, under `prefix`. A path that
 * could not name an object here is refused as the store would refuse the
 * object (not found, or outside the root), before any call.
 */
export function objectNameFor(prefix: string, path: string): string {
  const problem = objectPathProblem(path);
  if (problem !== undefined) throw problem;
  const name = prefix + path;
  if (Buffer.byteLength(name, 'utf8') > MAX_OBJECT_NAME_BYTES) {
    throw new AssetNotFoundError(`Asset "${path}" does not exist`);
  }
  return name;
}

/** Refuses an upload path no store takes: outside the root (AssetOutsideRootError) or malformed (ValidationError on `path`). */
export function checkUploadPath(path: string): void {
  const problem = assetPathProblem(path);
  if (problem?.code === 'outside_root')
    throw new AssetOutsideRootError(`Asset path "${path}" ${problem.message}`);
  if (problem !== undefined) {
    throw new ValidationError(`Asset path "${path}" ${problem.message}`, [
      { path: 'path', message: problem.message },
    ]);
  }
}

/** What `put` answers for bytes stored at `path`. */
export const uploaded = (path: string, bytes: Uint8Array, replaced: boolean): PutAssetResult => ({
  asset: { path, size: bytes.byteLength, type: assetTypeOf(path) ?? 'other' },
  replaced,
});
