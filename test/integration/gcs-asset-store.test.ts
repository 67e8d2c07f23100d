import { randomUUID } from 'node:crypto';
import { Storage } from '@google-cloud/storage';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GcsAssetStore } from '../../shared/adapters/gcs/asset-store.ts';
import {
  AssetExistsError,
  AssetNotFoundError,
  AssetOutsideRootError,
  ValidationError,
} from '../../shared/domain/errors.ts';
import { type FakeGcs, startFakeGcs } from '../support/fake-gcs.ts';

/*
 * GcsAssetStore driven through the real @google-cloud/storage 7.22 SDK
 * against a loopback fake of the Cloud Storage JSON API
 * (test/support/fake-gcs.ts); there is no GCS emulator among the test peers.
 * The SDK is given `apiEndpoint` and so sends no credentials at all
 * (`useAuthWithCustomEndpoint` left false): no Google credentials are needed,
 * and no Authorization header is checked. Where the fake differs from Cloud
 * Storage — what these tests therefore do not prove:
 * - No authentication or IAM: a missing roles/storage.objectCreator or
 *   objectViewer would pass here and 403 in GCP.
 * - Only objects.get (metadata), objects.list (prefix, maxResults,
 *   pageToken) and single-shot multipart/media inserts exist: no resumable
 *   uploads, downloads, delimiters, versions, soft delete, retention or
 *   metageneration preconditions. Any other call answers 400 unsupportedByFake.
 * - Page tokens are base64 of the next object name (GCS's are opaque) and
 *   pages are always full; GCS may return short pages with a token.
 * - Names are compared as JS strings (UTF-16 order); GCS lists in UTF-8 byte
 *   order. No 1,024-byte name limit, no rate limits (429) or 5xx; retries
 *   are turned off (`autoRetry: false`).
 * - Object resources carry the usual fields (size as a string, generation,
 *   md5Hash, crc32c — the SDK validates uploads against crc32c) but no ACLs,
 *   owner or customer-managed encryption fields.
 */

const BUCKET = 'rw-assets';

let fake: FakeGcs;
let storage: Storage;

beforeAll(async () => {
  fake = await startFakeGcs();
  fake.createBucket(BUCKET);
  const seed: Record<string, string> = {
    'playbooks/hello/site.yml': '- hosts: all\n',
    'playbooks/tools/setup.sh': 'echo hi\n',
    'playbooks/win/setup.ps1': 'Write-Host hi\n',
    'playbooks/pkgs/agent.rpm': 'rpm',
    'playbooks/pkgs/agent.deb': 'deb',
    'playbooks/README': 'docs',
    'playbooks/.git/config': '[core]',
    'playbooks/hello/.env': 'TOKEN=x',
    'playbooks/empty-folder/': '',
    'elsewhere/outside.yml': '- hosts: all\n',
  };
  for (const [name, body] of Object.entries(seed)) fake.seed(BUCKET, name, body);
  storage = new Storage({
    apiEndpoint: fake.apiEndpoint,
    projectId: 'rw-test',
    retryOptions: { autoRetry: false },
  });
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.requests.length = 0;
});

const unique = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;
const store = (options: { prefix?: string; pageSize?: number; bucket?: string } = {}) =>
  new GcsAssetStore({ storage, bucket: BUCKET, prefix: 'playbooks', ...options });
const text = (value: string): Uint8Array => new TextEncoder().encode(value);

describe('GcsAssetStore', () => {
  it('puts a new asset with ifGenerationMatch=0 and locates it as a gs URL', async () => {
    const prefix = unique('uploads');
    const assets = store({ prefix });

    const result = await assets.put('hello/site.yml', text('- hosts: all\n'));
    const where = await assets.locate('hello/site.yml');

    expect(result).toEqual({
      asset: { path: 'hello/site.yml', size: 13, type: 'playbook' },
      replaced: false,
    });
    expect(where).toEqual({ kind: 'url', url: `gs://${BUCKET}/${prefix}/hello/site.yml` });
    expect(fake.read(BUCKET, `${prefix}/hello/site.yml`)?.toString()).toBe('- hosts: all\n');
    const [upload, get] = fake.requests;
    expect(upload).toMatchObject({
      method: 'POST',
      path: `/upload/storage/v1/b/${BUCKET}/o`,
      query: { uploadType: 'multipart', name: `${prefix}/hello/site.yml`, ifGenerationMatch: '0' },
    });
    expect(upload?.headers.authorization).toBeUndefined();
    expect(get).toMatchObject({
      method: 'GET',
      path: `/storage/v1/b/${BUCKET}/o/${encodeURIComponent(`${prefix}/hello/site.yml`)}`,
    });
    expect(fake.requests).toHaveLength(2);
  });

  it('lists every servable object under the prefix across pages, sorted, with type badges', async () => {
    const listed = await store({ pageSize: 2 }).list();

    expect(listed).toEqual([
      { path: 'README', size: 4, type: 'other' },
      { path: 'hello/site.yml', size: 13, type: 'playbook' },
      { path: 'pkgs/agent.deb', size: 3, type: 'deb' },
      { path: 'pkgs/agent.rpm', size: 3, type: 'rpm' },
      { path: 'tools/setup.sh', size: 8, type: 'script' },
      { path: 'win/setup.ps1', size: 14, type: 'powershell' },
    ]);
    // 9 objects under playbooks/ at 2 a page: 5 objects.list calls, each after the first with a pageToken.
    expect(fake.requests).toHaveLength(5);
    expect(fake.requests.every((r) => r.query.prefix === 'playbooks/' && r.query.maxResults === '2')).toBe(
      true,
    );
    expect(fake.requests.slice(1).every((r) => (r.query.pageToken ?? '') !== '')).toBe(true);
  });

  it('stops listing at maxEntries and lists nothing for an empty prefix', async () => {
    const capped = await new GcsAssetStore({
      storage,
      bucket: BUCKET,
      prefix: 'playbooks/',
      maxEntries: 2,
    }).list();
    const empty = await store({ prefix: 'nothing-here/' }).list();

    expect(capped.map((a) => a.path)).toEqual(['README', 'hello/site.yml']);
    expect(empty).toEqual([]);
  });

  it('refuses to replace an existing asset, and replaces it with overwrite', async () => {
    const prefix = unique('uploads');
    const assets = store({ prefix });
    await assets.put('tools/one.sh', text('echo one\n'));

    const clobber = await assets.put('tools/one.sh', text('echo two\n')).catch((e: unknown) => e);
    const replaced = await assets.put('tools/one.sh', text('echo three\n'), { overwrite: true });

    expect(clobber).toBeInstanceOf(AssetExistsError);
    expect((clobber as Error).cause).toMatchObject({ code: 412 });
    expect(replaced).toEqual({ asset: { path: 'tools/one.sh', size: 11, type: 'script' }, replaced: true });
    expect(fake.read(BUCKET, `${prefix}/tools/one.sh`)?.toString()).toBe('echo three\n');
    const uploads = fake.requests.filter((r) => r.method === 'POST');
    expect(uploads.map((r) => r.query.ifGenerationMatch)).toEqual(['0', '0', undefined]);
    expect(await assets.list()).toEqual([{ path: 'tools/one.sh', size: 11, type: 'script' }]);
  });

  it('reports replaced: false when overwrite creates a new asset', async () => {
    const result = await store({ prefix: unique('uploads') }).put('a.deb', new Uint8Array([1, 2]), {
      overwrite: true,
    });

    expect(result).toEqual({ asset: { path: 'a.deb', size: 2, type: 'deb' }, replaced: false });
  });

  it('refuses traversal, absolute and hidden paths before sending any request', async () => {
    const assets = store();
    const bytes = new Uint8Array([1]);

    for (const path of [
      '/playbooks/hello/site.yml',
      '../elsewhere/outside.yml',
      'hello/../../elsewhere/outside.yml',
      '..\\elsewhere\\outside.yml',
      'C:\\site.yml',
      '\\\\host\\share\\site.yml',
    ]) {
      await expect(assets.locate(path), path).rejects.toBeInstanceOf(AssetOutsideRootError);
    }
    for (const path of ['.git/config', 'hello/.env', 'hello//site.yml', './hello/site.yml', '']) {
      await expect(assets.locate(path), path).rejects.toBeInstanceOf(AssetNotFoundError);
    }
    await expect(assets.put('../escape.sh', bytes)).rejects.toBeInstanceOf(AssetOutsideRootError);
    await expect(assets.put('/abs.sh', bytes)).rejects.toBeInstanceOf(AssetOutsideRootError);
    await expect(assets.put('.hidden/x.sh', bytes)).rejects.toBeInstanceOf(ValidationError);
    await expect(assets.put('no-extension', bytes)).rejects.toBeInstanceOf(ValidationError);
    expect(fake.requests).toEqual([]);
  });

  it('answers AssetNotFoundError for a missing object and for a missing bucket', async () => {
    const missingObject = await store()
      .locate('hello/missing.yml')
      .catch((e: unknown) => e);
    const missingBucket = await store({ bucket: 'no-such-bucket' })
      .locate('hello/site.yml')
      .catch((e: unknown) => e);

    expect(missingObject).toBeInstanceOf(AssetNotFoundError);
    expect((missingObject as Error).message).toBe('Asset "hello/missing.yml" does not exist');
    expect((missingObject as Error).cause).toMatchObject({ code: 404 });
    expect(missingBucket).toBeInstanceOf(AssetNotFoundError);
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      `GET /storage/v1/b/${BUCKET}/o/playbooks%2Fhello%2Fmissing.yml`,
      'GET /storage/v1/b/no-such-bucket/o/playbooks%2Fhello%2Fsite.yml',
    ]);
  });
});
