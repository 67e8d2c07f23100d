import type { AssetStorage } from '../app/asset-access.ts';
import type { Settings } from '../config/settings.ts';
import { noActiveStorageBackend, type StorageBackend } from '../domain/asset-access.ts';
import { NoActiveStorageError } from '../domain/errors.ts';
import type { AssetStore } from '../ports/asset-store.ts';

/** A store that refuses every call with the seeds' "No active storage backend" and why. */
export function noStorage(backend: StorageBackend, why: string): AssetStore {
  const refuse = (): Promise<never> => Promise.reject(new NoActiveStorageError(noActiveStorageBackend(why)));
  return { backend, locate: refuse, list: refuse, put: refuse };
}

/**
 * A deployed stack's storage: its S3 bucket (ASSET_BUCKET, ASSET_PREFIX).
 * Lambda has no lasting filesystem and its bundles carry only the AWS SDK, so
 * any other `storage_backend` leaves the deployment with no active backend:
 * uploads answer 503 and runs are refused with the reason.
 *
 * `s3` makes the bucket's store (an S3AssetStore over the caller's client, or
 * one that loads the S3 SDK on its first call: lazy-s3-assets.ts), so this
 * rule imports no SDK and the functions that never touch an asset load none.
 */
export function buildAwsStorage(options: {
  readonly settings: Settings;
  readonly bucket: string;
  readonly prefix?: string;
  readonly s3: (location: { readonly bucket: string; readonly prefix: string }) => AssetStore;
}): AssetStorage {
  const active = options.settings.storage_backend ?? 's3';
  if (active !== 's3') {
    const why = `storage_backend is ${active}, but a deployed stack serves assets from its S3 bucket (${options.bucket}): set storage_backend to s3 or leave it unset`;
    return { setup: { unavailable: why }, assets: noStorage(active, why) };
  }
  return {
    setup: { active },
    assets: options.s3({ bucket: options.bucket, prefix: options.prefix ?? '' }),
  };
}
