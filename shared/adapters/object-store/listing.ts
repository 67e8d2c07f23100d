import { objectPathProblem } from '../../domain/asset-path.ts';
import { AssetExistsError } from '../../domain/errors.ts';
import { assetTypeOf } from '../../domain/task.ts';
import type { AssetInfo } from '../../ports/asset-store.ts';
import { DEFAULT_MAX_ENTRIES } from './naming.ts';

/** How a store lists: at most `maxEntries` assets, `pageSize` objects per page (undefined: the API's default). */
export interface ListingLimits {
  readonly maxEntries: number;
  readonly pageSize: number | undefined;
}

/** A store's listing limits from its options (every object store takes the same two). */
export const listingLimits = (options: {
  readonly maxEntries?: number;
  readonly pageSize?: number;
}): ListingLimits => ({
  maxEntries: options.maxEntries ?? DEFAULT_MAX_ENTRIES,
  pageSize: options.pageSize,
});

/** One object as a listing page reports it. */
export interface ListedObject {
  readonly key: string;
  readonly size: number;
}

/**
 * What S3, Azure Blob and GCS listings have in common: keep the objects under
 * `prefix` that `locate` would serve (no folder markers, no hidden or unsafe
 * paths), stop at `maxEntries` without fetching more pages, sort by path.
 *
 * @example
 * const assets = await collectAssets(prefix, 10_000, pagesOf(bucket));
 */
export async function collectAssets(
  prefix: string,
  maxEntries: number,
  pages: AsyncIterable<readonly ListedObject[]>,
): Promise<AssetInfo[]> {
  const found: AssetInfo[] = [];
  for await (const page of pages) {
    for (const object of page) {
      if (!object.key.startsWith(prefix)) continue;
      const path = object.key.slice(prefix.length);
      if (path.endsWith('/') || objectPathProblem(path) !== undefined) continue;
      found.push({ path, size: object.size, type: assetTypeOf(path) ?? 'other' });
      if (found.length >= maxEntries) break;
    }
    if (found.length >= maxEntries) break;
  }
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The error every object store throws when a no-clobber upload meets an existing object. */
export const assetExists = (path: string, cause: unknown): AssetExistsError =>
  new AssetExistsError(`Asset "${path}" already exists; upload with overwrite to replace it`, { cause });
