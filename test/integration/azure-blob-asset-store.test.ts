import { randomUUID } from 'node:crypto';
import { BlobServiceClient, type ContainerClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AzureBlobAssetStore } from '../../shared/adapters/azure-blob/asset-store.ts';
import {
  AssetExistsError,
  AssetNotFoundError,
  AssetOutsideRootError,
  ValidationError,
} from '../../shared/domain/errors.ts';
import {
  FAKE_AZURE_ACCOUNT,
  FAKE_AZURE_ACCOUNT_KEY,
  type FakeAzureBlob,
  startFakeAzureBlob,
} from '../support/fake-azure-blob.ts';

/*
 * AzureBlobAssetStore driven through the real @azure/storage-blob 12.28 SDK
 * against a loopback fake of the Blob REST API (test/support/fake-azure-blob.ts);
 * there is no Azure emulator among the test peers. The SDK signs every request
 * with SharedKey (bearer tokens are refused over plain http). Where the fake
 * differs from Azure — what these tests therefore do not prove:
 * - SharedKey signatures are not verified: only the scheme and account name
 *   in `Authorization` are checked. A wrong key would pass here and fail in Azure.
 * - Only Put Blob (BlockBlob, single shot), Get Blob Properties and a flat
 *   List Blobs exist. Blocks, leases, snapshots, versions, tags, metadata,
 *   `include=`, `delimiter` and SAS are not modelled; any other call answers
 *   400 UnsupportedByFake. Uploads above the SDK's single-shot limit are not tried.
 * - `If-None-Match: *` on an existing blob answers 409 BlobAlreadyExists (as
 *   documented); the adapter's 412 branch is not exercised from the fake.
 * - List markers are base64 of the next blob name (Azure's are opaque); pages
 *   are always full, whereas Azure may return short or empty pages with a
 *   marker — the adapter follows the marker either way, unproven here.
 * - Blob names are compared as JS strings (UTF-16 order); Azure lists in
 *   UTF-8 byte order. No 1,024-character name limit, no throttling (503),
 *   no server timeouts; retries are turned off (`maxTries: 1`).
 * - The path-style URL (`http://127.0.0.1:port/<account>/…`) is the
 *   emulator form; in Azure the account is in the host name.
 */

const CONTAINER = 'rw-assets';

let fake: FakeAzureBlob;
let container: ContainerClient;

beforeAll(async () => {
  fake = await startFakeAzureBlob();
  fake.createContainer(CONTAINER);
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
  for (const [name, body] of Object.entries(seed)) fake.seed(CONTAINER, name, body);
  const service = new BlobServiceClient(
    fake.accountUrl,
    new StorageSharedKeyCredential(FAKE_AZURE_ACCOUNT, FAKE_AZURE_ACCOUNT_KEY),
    { retryOptions: { maxTries: 1 } },
  );
  container = service.getContainerClient(CONTAINER);
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.requests.length = 0;
});

const unique = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;
const store = (options: { prefix?: string; pageSize?: number } = {}) =>
  new AzureBlobAssetStore({ container, prefix: 'playbooks', ...options });
const text = (value: string): Uint8Array => new TextEncoder().encode(value);

describe('AzureBlobAssetStore', () => {
  it('puts a new asset with If-None-Match: * and locates it by its blob URL', async () => {
    const prefix = unique('uploads');
    const assets = store({ prefix });

    const result = await assets.put('hello/site.yml', text('- hosts: all\n'));
    const where = await assets.locate('hello/site.yml');

    expect(result).toEqual({
      asset: { path: 'hello/site.yml', size: 13, type: 'playbook' },
      replaced: false,
    });
    expect(where).toEqual({
      kind: 'url',
      url: `${fake.accountUrl}/${CONTAINER}/${prefix}/hello/site.yml`,
    });
    expect(fake.read(CONTAINER, `${prefix}/hello/site.yml`)?.toString()).toBe('- hosts: all\n');
    const put = fake.requests.find((r) => r.method === 'PUT');
    expect(put?.headers['if-none-match']).toBe('*');
    expect(put?.headers['x-ms-blob-type']).toBe('BlockBlob');
    expect(fake.requests.map((r) => r.method)).toEqual(['PUT', 'HEAD']);
  });

  it('lists every servable blob under the prefix across pages, sorted, with type badges', async () => {
    const listed = await store({ pageSize: 2 }).list();

    expect(listed).toEqual([
      { path: 'README', size: 4, type: 'other' },
      { path: 'hello/site.yml', size: 13, type: 'playbook' },
      { path: 'pkgs/agent.deb', size: 3, type: 'deb' },
      { path: 'pkgs/agent.rpm', size: 3, type: 'rpm' },
      { path: 'tools/setup.sh', size: 8, type: 'script' },
      { path: 'win/setup.ps1', size: 14, type: 'powershell' },
    ]);
    // 9 blobs under playbooks/ at 2 a page: 5 List Blobs calls, each after the first carrying a marker.
    const lists = fake.requests.filter((r) => r.query.comp === 'list');
    expect(lists).toHaveLength(5);
    expect(lists.every((r) => r.query.prefix === 'playbooks/' && r.query.maxresults === '2')).toBe(true);
    expect(lists.slice(1).every((r) => (r.query.marker ?? '') !== '')).toBe(true);
  });

  it('stops listing at maxEntries and lists nothing for an empty prefix', async () => {
    const capped = await new AzureBlobAssetStore({ container, prefix: 'playbooks/', maxEntries: 2 }).list();
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
    expect((clobber as Error).cause).toMatchObject({ statusCode: 409, code: 'BlobAlreadyExists' });
    expect(replaced).toEqual({ asset: { path: 'tools/one.sh', size: 11, type: 'script' }, replaced: true });
    expect(fake.read(CONTAINER, `${prefix}/tools/one.sh`)?.toString()).toBe('echo three\n');
    const puts = fake.requests.filter((r) => r.method === 'PUT');
    expect(puts.map((r) => r.headers['if-none-match'])).toEqual(['*', '*', undefined]);
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

  it('answers AssetNotFoundError for a missing blob and for a missing container', async () => {
    const missingBlob = await store()
      .locate('hello/missing.yml')
      .catch((e: unknown) => e);
    const missingContainer = await new AzureBlobAssetStore({
      container: new BlobServiceClient(
        fake.accountUrl,
        new StorageSharedKeyCredential(FAKE_AZURE_ACCOUNT, FAKE_AZURE_ACCOUNT_KEY),
        { retryOptions: { maxTries: 1 } },
      ).getContainerClient('no-such-container'),
    })
      .locate('hello/site.yml')
      .catch((e: unknown) => e);

    expect(missingBlob).toBeInstanceOf(AssetNotFoundError);
    expect((missingBlob as Error).message).toBe('Asset "hello/missing.yml" does not exist');
    expect((missingBlob as Error).cause).toMatchObject({ statusCode: 404 });
    expect(missingContainer).toBeInstanceOf(AssetNotFoundError);
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'HEAD /rw-assets/playbooks/hello/missing.yml',
      'HEAD /no-such-container/hello/site.yml',
    ]);
  });
});
