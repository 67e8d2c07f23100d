import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAws } from '../../bin/aws-mode/bootstrap.ts';
import { loadSettings } from '../../shared/config/settings.ts';
import { useMoto } from '../support/moto.ts';
import {
  type Api,
  allLogs,
  client,
  type LocalProcess,
  newDataDir,
  startLocal,
  waitForState,
} from './harness.ts';

/*
 * Local mode (`npm start`) with an in-cloud runner: a VM on AWS runs on ECS
 * (moto), its asset living on this host's filesystem. With an object store
 * configured (asset_s3_bucket) local mode copies the asset there and the task
 * reads it through a presigned GET URL; without one the run is refused at
 * submit, saying why. moto runs no ECS task: the ECS task stand-in (started
 * by `npm start` against an emulator) runs the task shim and the real
 * ansible-playbook, ships the output to CloudWatch Logs and feeds the task's
 * state changes to local mode; local mode also polls ECS, which is all it
 * would have against real ECS (no EventBridge rule reaches it).
 */

const moto = useMoto();
const TARGET = { kind: 'vm', cloud: 'aws', name: 'app-1', address: '127.0.0.1', connection: 'local' };

let ecsSettings: Record<string, string>;
let bucket: string;

/** The AWS resources an operator would have made: cluster, task definitions, log group, a bucket, a subnet. */
async function awsResources(): Promise<Record<string, string>> {
  const saved = { ...process.env };
  Object.assign(process.env, moto().env());
  try {
    const made = await bootstrapAws(process.env, loadSettings({ env: {} }));
    return Object.fromEntries(Object.entries(made).filter((e): e is [string, string] => e[1] !== undefined));
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

async function startWith(extra: Record<string, string>): Promise<{ local: LocalProcess; api: Api }> {
  const local = await startLocal(newDataDir(), {
    ...moto().env(),
    LOCAL_EXECUTOR: 'process',
    ANSIBLE_RUNNER_AWS: 'ecs',
    ...ecsSettings,
    ...extra,
  });
  const api = client(local.url, local.token);
  expect((await api('PUT', '/targets/app-1', TARGET)).status).toBe(201);
  return { local, api };
}

beforeAll(async () => {
  const made = await awsResources();
  bucket = made.ASSET_BUCKET ?? '';
  ecsSettings = {
    ANSIBLE_ECS_CLUSTER: made.ANSIBLE_ECS_CLUSTER ?? '',
    ANSIBLE_ECS_SUBNET_ID: made.ANSIBLE_ECS_SUBNET_ID ?? '',
    ANSIBLE_ECS_SECURITY_GROUP_IDS: made.ANSIBLE_ECS_SECURITY_GROUP_IDS ?? '',
    ANSIBLE_ECS_EXECUTION_ROLE_ARN: made.ANSIBLE_ECS_EXECUTION_ROLE_ARN ?? '',
    ANSIBLE_ECS_TASK_DEFINITIONS: made.ECS_TASK_DEFINITIONS ?? '',
    ANSIBLE_ECS_LOG_GROUP: made.LOG_GROUP ?? '',
  };
}, 60_000);

describe('local mode with the ECS runner on moto', () => {
  let withStore: { local: LocalProcess; api: Api } | undefined;
  let without: { local: LocalProcess; api: Api } | undefined;

  afterAll(async () => {
    await withStore?.local.stop();
    await without?.local.stop();
  });

  it('copies a local asset to the configured object store and the ECS task runs it from there', async () => {
    withStore = await startWith({ ASSET_S3_BUCKET: bucket });
    const { api, local } = withStore;

    const submitted = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'app-1',
      asset: 'hello/site.yml',
      extraVars: { greeting: 'staged through S3' },
    });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
    expect(submitted.body).toMatchObject({ state: 'queued', runner: 'ecs' });
    const run = await waitForState(api, submitted.body.id, 'terminal', 90_000);

    expect(run, local.output()).toMatchObject({
      state: 'succeeded',
      exitCode: 0,
      launch: { backend: 'ecs' },
    });
    // Its output, read back from the task's awslogs stream.
    expect(await allLogs(api, run.id)).toContain('staged through S3 from app-1');
    const s3 = new S3Client(moto().s3ClientConfig());
    const { Contents = [] } = await s3.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: 'remote-worker-staged/' }),
    );
    expect(Contents.map((o) => o.Key)).toEqual([
      expect.stringMatching(/^remote-worker-staged\/[0-9a-f]{32}\/hello\/site\.yml$/),
    ]);
    s3.destroy();
  });

  it('refuses the run at submit, naming the runner and the backend, when no object store is configured', async () => {
    without = await startWith({});

    const submitted = await without.api('POST', '/runs', {
      kind: 'vm',
      targetId: 'app-1',
      asset: 'hello/site.yml',
    });

    // Recorded, not queued: 200 with the refused run (202 is for accepted work).
    expect(submitted.status).toBe(200);
    expect(submitted.body).toMatchObject({ state: 'refused' });
    expect(submitted.body.reason).toMatch(
      /^The ECS runner cannot read assets on the local filesystem storage backend: they exist only on this host/,
    );
  });
});
