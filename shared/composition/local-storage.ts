import { LocalAssetStore } from '../adapters/local/asset-store.ts';
import type { AssetStorage } from '../app/asset-access.ts';
import type { Settings } from '../config/settings.ts';
import type { StorageBackend } from '../domain/asset-access.ts';
import { NoActiveStorageError, SettingsInvalidError } from '../domain/errors.ts';
import { onFirstUse } from '../lib/on-first-use.ts';
import type { AssetStore } from '../ports/asset-store.ts';
import type { SecretSource } from '../ports/secret-source.ts';

// Local mode's storage, apart from the deployed stack's (storage.ts): nothing here imports an SDK until a
// store is used, so local mode without an object store never loads the S3 SDK (~35 MiB, ~0.3 s of start-up).

/** Where staged copies of local assets go inside the staging store: apart from its own assets. */
const STAGING_PREFIX = 'remote-worker-staged/';

/**
 * A store built on first use: the AWS, Azure and Google SDKs load, and the account
 * key is read from the secret store, only when a run or an upload needs them.
 * A failed build is retried on the next call.
 */
function lazyStore(backend: StorageBackend, load: () => Promise<AssetStore>): AssetStore {
  const get = onFirstUse(load);
  return {
    backend,
    locate: async (path) => (await get()).locate(path),
    list: async () => (await get()).list(),
    put: async (path, bytes, options) => (await get()).put(path, bytes, options),
    grantRead: async (path, ttl) => {
      const s = await get();
      if (s.grantRead === undefined) throw new NoActiveStorageError(`${backend} cannot grant read URLs`);
      return s.grantRead(path, ttl);
    },
  };
}

const prefixed = (prefix: string | undefined, extra = ''): string => {
  const p = (prefix ?? '').replace(/^\/+/, '');
  return `${p === '' || p.endsWith('/') ? p : `${p}/`}${extra}`;
};

/** The account name in a blob service URL: the host's first label, or the path's first segment (emulators). */
function azureAccountName(accountUrl: string): string {
  const url = new URL(accountUrl);
  const label = url.hostname.split('.')[0] ?? '';
  if (/\.blob\./.test(url.hostname)) return label;
  return url.pathname.split('/').filter((s) => s !== '')[0] ?? label;
}

interface ObjectStoreContext {
  readonly settings: Settings;
  readonly secrets: SecretSource;
  /** Extra key prefix under the configured one (the staging area). */
  readonly under?: string;
}

/** Each object store whose settings are complete, built lazily; undefined when its settings are missing. */
const objectStores: Record<
  Exclude<StorageBackend, 'local'>,
  (c: ObjectStoreContext) => AssetStore | undefined
> = {
  s3: ({ settings, under }) => {
    const bucket = settings.asset_s3_bucket;
    if (bucket === undefined) return undefined;
    return lazyStore('s3', async () => {
      const [{ S3Client }, { S3AssetStore }] = await Promise.all([
        import('@aws-sdk/client-s3'),
        import('../adapters/s3/asset-store.ts'),
      ]);
      // An emulator (moto, MinIO) serves S3 path-style only.
      const forcePathStyle =
        process.env.AWS_ENDPOINT_URL !== undefined || process.env.AWS_ENDPOINT_URL_S3 !== undefined;
      return new S3AssetStore({
        bucket,
        prefix: prefixed(settings.asset_s3_prefix, under),
        client: new S3Client({ forcePathStyle }),
      });
    });
  },
  azure_blob: ({ settings, secrets, under }) => {
    const accountUrl = settings.azure_storage_account_url;
    const containerName = settings.azure_storage_container;
    if (accountUrl === undefined || containerName === undefined) return undefined;
    const keySecret = settings.azure_storage_key_secret;
    return lazyStore('azure_blob', async () => {
      const [{ BlobServiceClient, StorageSharedKeyCredential }, { AzureBlobAssetStore }] = await Promise.all([
        import('@azure/storage-blob'),
        import('../adapters/azure-blob/asset-store.ts'),
      ]);
      if (keySecret !== undefined) {
        const credential = new StorageSharedKeyCredential(
          azureAccountName(accountUrl),
          await secrets.get(keySecret),
        );
        return new AzureBlobAssetStore({
          container: new BlobServiceClient(accountUrl, credential).getContainerClient(containerName),
          prefix: prefixed(settings.azure_storage_prefix, under),
        });
      }
      const { defaultAzureCredential } = await import('../adapters/cluster-auth/aks-token.ts');
      const service = new BlobServiceClient(accountUrl, await defaultAzureCredential());
      return new AzureBlobAssetStore({
        container: service.getContainerClient(containerName),
        prefix: prefixed(settings.azure_storage_prefix, under),
        userDelegationKey: async (startsOn, expiresOn) => service.getUserDelegationKey(startsOn, expiresOn),
      });
    });
  },
  gcs: ({ settings, under }) => {
    const bucket = settings.gcs_bucket;
    if (bucket === undefined) return undefined;
    return lazyStore('gcs', async () => {
      const [{ Storage }, { GcsAssetStore }] = await Promise.all([
        import('@google-cloud/storage'),
        import('../adapters/gcs/asset-store.ts'),
      ]);
      // Application Default Credentials; STORAGE_EMULATOR_HOST points the SDK at an emulator.
      return new GcsAssetStore({
        bucket,
        prefix: prefixed(settings.gcs_prefix, under),
        storage: new Storage(),
      });
    });
  },
};

/** The keys an object store needs, for the start-up message when it is the active one. */
const REQUIRED_KEYS: Record<Exclude<StorageBackend, 'local'>, string> = {
  s3: 'asset_s3_bucket',
  azure_blob: 'azure_storage_account_url and azure_storage_container',
  gcs: 'gcs_bucket',
};

/**
 * Local mode's storage: the active backend (`storage_backend`, default the
 * local filesystem under `assetRoot`, bin/local-mode/asset-root.ts) and, when it is local, the
 * first object store whose settings are complete (S3, then Azure Blob, then
 * GCS) as the place local assets are copied to for in-cloud runners.
 * A chosen object store without its settings stops start-up naming the keys.
 *
 * @example
 * const storage = buildLocalStorage({ settings, secrets, assetRoot: await localAssetRoot({ settings, cwd, dataDir }) });
 */
export function buildLocalStorage(options: {
  readonly settings: Settings;
  readonly secrets: SecretSource;
  /** The local backend's directory (`local_storage_path`, or the data directory's default). */
  readonly assetRoot: string;
}): AssetStorage {
  const { settings } = options;
  const active = settings.storage_backend ?? 'local';
  if (active !== 'local') {
    const assets = objectStores[active](options);
    if (assets === undefined) {
      throw new SettingsInvalidError([
        { path: 'storage_backend', message: `is ${active}: set ${REQUIRED_KEYS[active]} as well` },
      ]);
    }
    return { setup: { active }, assets };
  }
  const assets = new LocalAssetStore({ root: options.assetRoot });
  for (const backend of ['s3', 'azure_blob', 'gcs'] as const) {
    const staging = objectStores[backend]({ ...options, under: STAGING_PREFIX });
    if (staging !== undefined) return { setup: { active, staging: backend }, assets, staging };
  }
  return { setup: { active }, assets };
}
