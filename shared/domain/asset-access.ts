import type { Runner } from './run.ts';

/**
 * Which storage backend holds the assets, and how each runner's task reaches
 * the one asset its run names.
 *
 * In-cloud tasks (ECS, ACI, Cloud Run, Kubernetes pods) get a short-lived
 * read capability for exactly their object — an S3 presigned GET, an Azure
 * SAS, a GCS V4 signed URL — rather than reading with their own identity.
 * Why: a capability works across clouds (an ACI or Kubernetes task can read
 * an S3 asset, an ECS task a GCS one) with no cross-cloud identity federation
 * and no storage SDK in the runner image; it names one object, so a task
 * cannot list or read its neighbours; and it expires with the run's start
 * deadline. The URL travels only in the task's own launch request, is never
 * written to a run record or a queue message, and the shim keeps it out of
 * its output.
 */
export const STORAGE_BACKENDS = ['local', 's3', 'azure_blob', 'gcs'] as const;
export type StorageBackend = (typeof STORAGE_BACKENDS)[number];

export const STORAGE_BACKEND_NAMES: Record<StorageBackend, string> = {
  local: 'local filesystem',
  s3: 'S3',
  azure_blob: 'Azure Blob',
  gcs: 'GCS',
};

export const RUNNER_NAMES: Record<Runner, string> = {
  local: 'local (relay)',
  ecs: 'ECS',
  aci: 'ACI',
  gcp: 'Cloud Run',
  kubernetes: 'Kubernetes pod',
};

/**
 * The storage this mode has: the active backend (where `POST /assets` writes
 * and runs read) or why there is none, and an object store local files are
 * copied to for in-cloud tasks.
 */
export type StorageSetup =
  | {
      readonly active: StorageBackend;
      /** An object store local assets are staged in for in-cloud runners (local mode only). */
      readonly staging?: StorageBackend;
    }
  | { readonly active?: undefined; readonly unavailable: string };

/** How a runner's task reads its asset. */
export type AssetRoute =
  /** A path on the relay host (mounted into its container). */
  | { readonly via: 'file' }
  /** A read URL for the object in the active store. */
  | { readonly via: 'url' }
  /** Copied to the staging object store first, then a read URL for the copy. */
  | { readonly via: 'staged'; readonly staging: StorageBackend }
  | { readonly refused: string };

/** The seeds' refusal when no storage backend is usable. */
export const noActiveStorageBackend = (why: string): string => `No active storage backend: ${why}`;

/**
 * How `runner` reads assets from this storage, or why it cannot. Only the
 * relay on this host reads the local filesystem; every other runner needs an
 * object store it is handed a read URL for.
 */
export function assetRoute(runner: Runner, storage: StorageSetup): AssetRoute {
  if (storage.active === undefined) return { refused: noActiveStorageBackend(storage.unavailable) };
  if (storage.active !== 'local') return { via: 'url' };
  if (runner === 'local') return { via: 'file' };
  if (storage.staging !== undefined) return { via: 'staged', staging: storage.staging };
  return {
    refused: `The ${RUNNER_NAMES[runner]} runner cannot read assets on the ${STORAGE_BACKEND_NAMES.local} storage backend: they exist only on this host. Configure an object store to copy them to (asset_s3_bucket, azure_storage_account_url with azure_storage_container, or gcs_bucket), or set storage_backend to s3, azure_blob or gcs`,
  };
}

/**
 * How long a task's read URL stays valid: until the run's start deadline (the
 * task fetches its asset as it starts), and never past the run's own deadline.
 */
export function assetUrlTtlSeconds(
  startDeadlineSeconds: number,
  runDeadlineMs: number,
  nowMs: number,
): number {
  const untilRunDeadline = Math.floor((runDeadlineMs - nowMs) / 1000);
  return Math.max(1, Math.min(startDeadlineSeconds, untilRunDeadline));
}
