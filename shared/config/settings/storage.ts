import { STORAGE_BACKENDS } from '../../domain/asset-access.ts';
import * as z from '../../lib/zod.ts';
import { type AreaSettings, defaulted, httpUrl, optionalText, type RuleContext } from './fields.ts';

/** Asset storage: the active backend, its location, and how long a task may take to fetch its asset. */
export const storageSettings = {
  // Asset storage. The active backend is where POST /assets writes and runs read; unset, local mode
  // uses the local filesystem and a deployed stack its S3 bucket. In-cloud tasks get a read URL.
  storage_backend: () => z.optional(z.enum(STORAGE_BACKENDS)),
  /**
   * The local backend's root. Unset: `<REMOTE_WORKER_DATA_DIR>/assets`, seeded with the examples on first
   * start (bin/local-mode/asset-root.ts), so uploads never land in the source tree.
   */
  local_storage_path: optionalText,
  /** S3 bucket (and key prefix) of the s3 backend; a deployed stack sets its own bucket. */
  asset_s3_bucket: optionalText,
  asset_s3_prefix: () => z.optional(z.string()),
  /** Blob service URL of the azure_blob backend: https://<account>.blob.core.windows.net */
  azure_storage_account_url: () => z.optional(httpUrl()),
  azure_storage_container: optionalText,
  azure_storage_prefix: () => z.optional(z.string()),
  /**
   * The NAME of the secret holding the storage account key, never the key: with it, read SASs are signed
   * with the key; without it, with a user delegation key the Azure identity (AZURE_* env) asks for.
   */
  azure_storage_key_secret: optionalText,
  gcs_bucket: optionalText,
  gcs_prefix: () => z.optional(z.string()),
  /**
   * How long a launched task has to start and fetch its asset: the lifetime of its read URL (never past
   * the run's own deadline). Fargate image pulls and Cloud Run cold starts take minutes at worst.
   */
  start_deadline_seconds: defaulted(900, () => z.int().check(z.minimum(60), z.maximum(43_200))),
};

/** Rules across the storage keys: each backend needs its location. */
export function checkStorage(s: AreaSettings<typeof storageSettings>, check: RuleContext): void {
  if (s.storage_backend === 'azure_blob') {
    check.needs(s, 'azure_storage_account_url', 'when storage_backend is azure_blob');
    check.needs(s, 'azure_storage_container', 'when storage_backend is azure_blob');
  }
  if (s.storage_backend === 'gcs') check.needs(s, 'gcs_bucket', 'when storage_backend is gcs');
  if (s.azure_storage_container !== undefined)
    check.needs(s, 'azure_storage_account_url', 'with azure_storage_container');
}
