import { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalAssetStore } from '../../shared/adapters/local/asset-store.ts';
import { S3AssetStore } from '../../shared/adapters/s3/asset-store.ts';
import { openDatabase } from '../../shared/adapters/sqlite/database.ts';
import { SqliteRunStore } from '../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../shared/adapters/sqlite/target-store.ts';
import type { AssetStorage } from '../../shared/app/asset-access.ts';
import { submitRun } from '../../shared/app/runs.ts';
import { prepareTask } from '../../shared/app/task-prep.ts';
import { buildAwsStorage } from '../../shared/composition/storage.ts';
import { loadSettings } from '../../shared/config/settings.ts';
import { RUNNER_NAMES, type StorageBackend } from '../../shared/domain/asset-access.ts';
import { LaunchRejectedError } from '../../shared/domain/errors.ts';
import { newRun, RUNNERS, type Run, type Runner, transition } from '../../shared/domain/run.ts';
import type { AssetStore } from '../../shared/ports/asset-store.ts';
import {
  azureAssetStore,
  exampleAssets,
  gcsAssetStore,
  gcsSigner,
  type ObjectStores,
  s3AssetStore,
} from '../support/asset-stores.ts';
import { type FakeAzureBlob, startFakeAzureBlob } from '../support/fake-azure-blob.ts';
import { type FakeGcs, startFakeGcs } from '../support/fake-gcs.ts';
import { useMoto } from '../support/moto.ts';
import { runTaskOnLocalhost } from '../support/task-run.ts';
import { makeTestApp, PLAYBOOKS_ROOT, vmTarget } from '../unit/app/harness.ts';

/*
 * Every runner × storage backend pair, as the task sees it: where the run's
 * asset is read from, and — for every pair handed a read URL — the task shim
 * really fetching it (S3 presigned GET on moto; an Azure SAS and a GCS V4
 * signed URL on their loopback fakes, which verify the signature, expiry and
 * scope: see test/support/fake-azure-blob.ts and fake-gcs.ts for what they do
 * not model) and running the play. The launchers' own tests prove the URL
 * reaches each backend's task definition (ecs-launcher: S3, aci-launcher:
 * Azure Blob, cloud-run-launcher and kubernetes-launcher: GCS); every
 * launcher hands its task exactly what prepareTask returns, which is what
 * this file drives. Pairs a task cannot read are refused at submit.
 */

const moto = useMoto();
const CLOUD_RUNNERS = RUNNERS.filter((r): r is Exclude<Runner, 'local'> => r !== 'local');
const OBJECT_BACKENDS = ['s3', 'azure_blob', 'gcs'] as const;

let azure: FakeAzureBlob;
let gcs: FakeGcs;
let stores: ObjectStores;
/** Empty object stores, to stage local assets in. */
let staging: ObjectStores;
const db = openDatabase(':memory:');
const store = new SqliteRunStore({ db });
const targets = new SqliteTargetStore({ db });
const local = new LocalAssetStore({ root: PLAYBOOKS_ROOT });

beforeAll(async () => {
  const files = exampleAssets('hello/site.yml');
  const signer = gcsSigner();
  azure = await startFakeAzureBlob();
  gcs = await startFakeGcs({ signer: { clientEmail: signer.clientEmail, publicKey: signer.publicKey } });
  stores = {
    s3: await s3AssetStore(moto(), 'rw-assets', files),
    azure_blob: azureAssetStore(azure, 'rw-assets', files),
    gcs: gcsAssetStore(gcs, signer, 'rw-assets', files),
  };
  staging = {
    s3: await s3AssetStore(moto(), 'rw-staging', {}, 'remote-worker-staged/'),
    azure_blob: azureAssetStore(azure, 'rw-staging', {}, 'remote-worker-staged/'),
    gcs: gcsAssetStore(gcs, signer, 'rw-staging', {}, 'remote-worker-staged/'),
  };
  await targets.putTarget(vmTarget('vm-1'));
}, 60_000);

afterAll(async () => {
  db.close();
  await azure?.close();
  await gcs?.close();
});

/** A run as the dispatcher hands it to `runner`'s launcher. */
function runOn(runner: Runner, greeting: string): Run {
  const draft = newRun(
    {
      id: `run-${runner}-${Math.random().toString(36).slice(2, 8)}`,
      kind: 'vm',
      targetId: 'vm-1',
      asset: 'hello/site.yml',
      extraVars: { greeting },
      requestedBy: 'alice',
      timeoutSeconds: 3600,
    },
    new Date().toISOString(),
  );
  return transition(draft, 'dispatching', new Date().toISOString(), {
    patch: { attempt: 1, owner: 'dispatcher:test', runner, image: 'any' },
  });
}

const prepare = (run: Run, assets: AssetStore, storage?: AssetStorage) =>
  prepareTask(
    {
      store,
      targets,
      assets,
      ...(storage === undefined ? {} : { storage }),
      secrets: { get: async () => '' },
    },
    run,
  );

describe.each(OBJECT_BACKENDS)('on the %s backend', (backend) => {
  it.each(RUNNERS)(
    'a %s task fetches its asset through the read URL it is handed, and runs it',
    async (runner) => {
      const run = runOn(runner, `${runner} via ${backend}`);

      const { spec } = await prepare(run, stores[backend]);

      expect(spec.asset.kind).toBe('url');
      const url = spec.asset.kind === 'url' ? new URL(spec.asset.url) : undefined;
      // A capability for exactly this object, not the store's plain address.
      expect(url?.pathname).toMatch(/\/rw-assets\/playbooks\/hello\/site\.yml$/);
      expect(url?.search).toMatch(/X-Amz-Signature=|sig=|X-Goog-Signature=/);
      const task = await runTaskOnLocalhost(spec);
      expect(task.output).toContain(`${runner} via ${backend} from localhost`);
      expect(task.code).toBe(0);
    },
  );
});

describe.each(OBJECT_BACKENDS)('an asset removed after submit, on the %s backend', (backend) => {
  it('is signed without a request, and the task says the asset is gone', async () => {
    // Dispatch signs without looking (submit checked the asset): a run whose asset went since gets a URL…
    const run = { ...runOn('ecs', 'gone'), asset: 'hello/removed-since-submit.yml' };

    const { spec } = await prepare(run, stores[backend]);

    // …and its task fails on the fetch, naming the asset (never the signature) and what happened.
    const task = await runTaskOnLocalhost(spec);
    expect(task.code).not.toBe(0);
    expect(task.output).toMatch(
      /could not fetch the asset \S+\/hello\/removed-since-submit\.yml: HTTP 40[34] \(.*the asset was removed from storage after the run was submitted\)/,
    );
    expect(task.output).not.toMatch(/X-Amz-Signature|sig=|X-Goog-Signature/);
  });
});

describe('on the local filesystem backend', () => {
  it('the relay reads the file itself', async () => {
    const { spec } = await prepare(runOn('local', 'x'), local);

    expect(spec.asset).toEqual({ kind: 'file', path: `${PLAYBOOKS_ROOT}/hello/site.yml` });
  });

  it.each(CLOUD_RUNNERS)(
    'a %s run is refused at submit, naming the runner and the backend',
    async (runner) => {
      const cloud = ({ ecs: 'aws', aci: 'azure', gcp: 'gcp', kubernetes: 'aws' } as const)[runner];
      const app = makeTestApp({
        launcherBackend: runner,
        env: {
          [`ANSIBLE_RUNNER_${cloud.toUpperCase()}`]: runner,
          ANSIBLE_ECS_SUBNET_ID: 'subnet-0abc',
          ANSIBLE_ECS_EXECUTION_ROLE_ARN: 'arn:aws:iam::111111111111:role/exec',
          AZURE_RESOURCE_GROUP: 'rg',
          GCP_PROJECT_ID: 'p',
          GCP_REGION: 'europe-west1',
        },
      });
      try {
        await app.targets.putTarget(vmTarget('vm-1', { cloud }));

        const { run } = await submitRun(
          app.deps,
          { kind: 'vm', targetId: 'vm-1', asset: 'hello/site.yml', extraVars: {}, secrets: [] },
          'alice',
        );

        expect(run.state).toBe('refused');
        expect(run.reason).toContain(
          `The ${RUNNER_NAMES[runner]} runner cannot read assets on the local filesystem storage backend`,
        );
        expect(app.dispatchQueue.depth().visible).toBe(0);
        // And a dispatcher that still got one refuses it the same way rather than launching.
        await expect(prepare(runOn(runner, 'x'), local)).rejects.toThrow(LaunchRejectedError);
      } finally {
        app.close();
      }
    },
  );

  it.each(OBJECT_BACKENDS)(
    'with %s configured as the object store, local mode copies the asset there first and the task fetches the copy',
    async (stagingBackend: StorageBackend) => {
      const target = staging[stagingBackend as (typeof OBJECT_BACKENDS)[number]];
      const storage: AssetStorage = {
        setup: { active: 'local', staging: stagingBackend },
        assets: local,
        staging: target,
      };
      const run = runOn('ecs', `staged on ${stagingBackend}`);

      const first = await prepare(run, local, storage);
      const again = await prepare(run, local, storage);

      const url = first.spec.asset.kind === 'url' ? new URL(first.spec.asset.url) : undefined;
      // Content-addressed: the same bytes stage once, under a name that changes with the content.
      expect(url?.pathname).toMatch(/\/rw-staging\/remote-worker-staged\/[0-9a-f]{32}\/hello\/site\.yml$/);
      expect(again.spec.asset.kind === 'url' && new URL(again.spec.asset.url).pathname).toBe(url?.pathname);
      const task = await runTaskOnLocalhost(first.spec);
      expect(task.output).toContain(`staged on ${stagingBackend} from localhost`);
      expect(task.code).toBe(0);
    },
  );
});

describe('with no active storage backend', () => {
  it('refuses every run at submit with the seeds’ message, and uploads answer 503', async () => {
    const settings = loadSettings({ env: { STORAGE_BACKEND: 'gcs', GCS_BUCKET: 'b' } });
    const storage = buildAwsStorage({
      settings,
      bucket: 'rw-assets',
      s3: (location) => new S3AssetStore({ client: new S3Client({}), ...location }),
    });
    const app = makeTestApp();
    try {
      await app.targets.putTarget(vmTarget('vm-1'));
      const deps = { ...app.deps, assets: storage.assets, storage };

      const { run } = await submitRun(
        deps,
        { kind: 'vm', targetId: 'vm-1', asset: 'hello/site.yml', extraVars: {}, secrets: [] },
        'alice',
      );

      expect(run.state).toBe('refused');
      expect(run.reason).toBe(
        'No active storage backend: storage_backend is gcs, but a deployed stack serves assets from its S3 bucket (rw-assets): set storage_backend to s3 or leave it unset',
      );
      await expect(storage.assets.put('x.yml', new Uint8Array([1]))).rejects.toMatchObject({
        code: 'no_active_storage',
      });
    } finally {
      app.close();
    }
  });
});
