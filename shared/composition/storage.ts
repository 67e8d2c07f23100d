import type { S3Client } from '@aws-sdk/client-s3';
import { S3AssetStore } from '../adapters/s3/asset-store.ts';
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
 */
export function buildAwsStorage(options: {
  readonly settings: Settings;
  readonly client: S3Client;
  readonly bucket: string;
  readonly prefix?: string;
}): AssetStorage {
  const active = options.settings.storage_backend ?? 's3';
  if (active !== 's3') {
    const why = `storage_backend is ${active}, but a deployed stack serves assets from its S3 bucket (${options.bucket}): set storage_backend to s3 or leave it unset`;
    return { setup: { unavailable: why }, assets: noStorage(active, why) };
  }
  return {
    setup: { active },
    assets: new S3AssetStore({
      client: options.client,
      bucket: options.bucket,
      prefix: options.prefix ?? '',
    }),
  };
}
