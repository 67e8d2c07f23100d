import { onFirstUse } from '../lib/on-first-use.ts';
import type { AssetStore } from '../ports/asset-store.ts';

/**
 * The stack's S3 asset store, with the S3 SDK and its adapter loaded on the
 * first call rather than at cold start. The whole AWS composition (aws.ts)
 * serves functions that never read an asset (the pollers, the reconciler,
 * the ECS event and dead-letter functions, cancel, logs); the S3 client's
 * modules cost each of them about 20 ms of CPU per cold start on the bench
 * machine, about a quarter of what the composition adds over the SDK clients
 * they do use. Same store, same calls, same errors.
 *
 * @example
 * const assets = lazyS3AssetStore({ bucket: 'rw-assets', prefix: '' }, false);
 * await assets.locate('hello/site.yml'); // loads the S3 SDK, then HEADs the object
 */
export function lazyS3AssetStore(
  location: { readonly bucket: string; readonly prefix: string },
  forcePathStyle: boolean,
): AssetStore {
  const store = onFirstUse(async () => {
    const [{ S3Client }, { S3AssetStore }] = await Promise.all([
      import('@aws-sdk/client-s3'),
      import('../adapters/s3/asset-store.ts'),
    ]);
    return new S3AssetStore({ client: new S3Client({ forcePathStyle }), ...location });
  });
  return {
    backend: 's3',
    locate: async (path) => (await store()).locate(path),
    list: async () => (await store()).list(),
    put: async (path, bytes, options) => (await store()).put(path, bytes, options),
    grantRead: async (path, ttlSeconds) => (await store()).grantRead(path, ttlSeconds),
  };
}
