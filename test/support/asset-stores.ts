import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { Storage } from '@google-cloud/storage';
import { AzureBlobAssetStore } from '../../shared/adapters/azure-blob/asset-store.ts';
import { GcsAssetStore } from '../../shared/adapters/gcs/asset-store.ts';
import { S3AssetStore } from '../../shared/adapters/s3/asset-store.ts';
import type { AssetStore } from '../../shared/ports/asset-store.ts';
import { FAKE_AZURE_ACCOUNT, FAKE_AZURE_ACCOUNT_KEY, type FakeAzureBlob } from './fake-azure-blob.ts';
import type { FakeGcs } from './fake-gcs.ts';
import type { MotoServer } from './moto.ts';

/**
 * The three object stores as the tests reach them — S3 on moto, Azure Blob and
 * GCS on their loopback fakes — each seeded with the same assets and able to
 * hand a task a read URL (`grantRead`), so a test can prove a task really
 * fetches its asset through what a launcher handed it.
 */

const EXAMPLES = fileURLToPath(new URL('../../examples/playbooks', import.meta.url));

/** The example assets the launcher tests name, by path. */
export function exampleAssets(...paths: readonly string[]): Record<string, Uint8Array> {
  return Object.fromEntries(paths.map((p) => [p, readFileSync(`${EXAMPLES}/${p}`)]));
}

/** A bucket on moto holding `files` under `prefix`. */
export async function s3AssetStore(
  moto: MotoServer,
  bucket: string,
  files: Readonly<Record<string, Uint8Array>>,
  prefix = 'playbooks/',
): Promise<S3AssetStore> {
  const client = new S3Client(moto.s3ClientConfig());
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  for (const [path, body] of Object.entries(files)) {
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: prefix + path, Body: body }));
  }
  return new S3AssetStore({ client, bucket, prefix });
}

/** A container on the Azure fake holding `files`; the store signs SASs with the account key. */
export function azureAssetStore(
  fake: FakeAzureBlob,
  container: string,
  files: Readonly<Record<string, Uint8Array>>,
  prefix = 'playbooks/',
): AzureBlobAssetStore {
  fake.createContainer(container);
  for (const [path, body] of Object.entries(files)) fake.seed(container, prefix + path, body);
  const credential = new StorageSharedKeyCredential(FAKE_AZURE_ACCOUNT, FAKE_AZURE_ACCOUNT_KEY);
  const service = new BlobServiceClient(fake.accountUrl, credential, { retryOptions: { maxTries: 1 } });
  return new AzureBlobAssetStore({ container: service.getContainerClient(container), prefix });
}

/** A service account key for signing GCS URLs: the fake verifies with `publicKey`. */
export interface GcsSigner {
  readonly clientEmail: string;
  readonly privateKeyPem: string;
  readonly publicKey: KeyObject;
}

export function gcsSigner(): GcsSigner {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    clientEmail: 'remote-worker@test-project.iam.gserviceaccount.com',
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey,
  };
}

/** A bucket on the GCS fake holding `files`; the store signs V4 URLs with `signer`'s key, locally. */
export function gcsAssetStore(
  fake: FakeGcs,
  signer: GcsSigner,
  bucket: string,
  files: Readonly<Record<string, Uint8Array>>,
  prefix = 'playbooks/',
): GcsAssetStore {
  fake.createBucket(bucket);
  for (const [path, body] of Object.entries(files)) fake.seed(bucket, prefix + path, body);
  const storage = new Storage({
    apiEndpoint: fake.apiEndpoint,
    projectId: 'test-project',
    credentials: { client_email: signer.clientEmail, private_key: signer.privateKeyPem },
    retryOptions: { autoRetry: false },
  });
  return new GcsAssetStore({ bucket, prefix, storage });
}

/** The stores keyed by backend, for tests that go through every one. */
export type ObjectStores = Readonly<Record<'s3' | 'azure_blob' | 'gcs', AssetStore>>;
