import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { lazyS3AssetStore } from '../../shared/composition/lazy-s3-assets.ts';
import { AssetExistsError, AssetNotFoundError } from '../../shared/domain/errors.ts';
import { useMoto } from '../support/moto.ts';

const moto = useMoto();
const BUCKET = 'rw-lazy-assets';
const saved = { ...process.env };

describe('lazyS3AssetStore', () => {
  beforeAll(async () => {
    await new S3Client(moto().s3ClientConfig()).send(new CreateBucketCommand({ Bucket: BUCKET }));
  });
  afterEach(() => {
    process.env = { ...saved };
  });

  it('stores, locates, lists and presigns through the S3 store it loads on the first call', async () => {
    // The store makes its own S3Client on the first call: it finds moto the way a Lambda finds AWS, from the environment.
    Object.assign(process.env, moto().env());
    const assets = lazyS3AssetStore({ bucket: BUCKET, prefix: 'assets/' }, true);

    const put = await assets.put('hello/site.yml', new TextEncoder().encode('- hosts: all\n'));
    const location = await assets.locate('hello/site.yml');
    const listed = await assets.list();
    const url = await assets.grantRead?.('hello/site.yml', 60);

    expect(assets.backend).toBe('s3');
    expect(put.replaced).toBe(false);
    expect(location).toEqual({ kind: 'url', url: `s3://${BUCKET}/assets/hello/site.yml` });
    expect(listed.map((a) => a.path)).toEqual(['hello/site.yml']);
    expect(new URL(url ?? '').pathname).toBe(`/${BUCKET}/assets/hello/site.yml`);
  });

  it("answers the S3 store's errors: a missing asset, an existing one without overwrite", async () => {
    Object.assign(process.env, moto().env());
    const assets = lazyS3AssetStore({ bucket: BUCKET, prefix: 'errors/' }, true);
    await assets.put('a.yml', new Uint8Array([1]));

    await expect(assets.locate('missing.yml')).rejects.toBeInstanceOf(AssetNotFoundError);
    await expect(assets.put('a.yml', new Uint8Array([2]))).rejects.toBeInstanceOf(AssetExistsError);
  });
});
