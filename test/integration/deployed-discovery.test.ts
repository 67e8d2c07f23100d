import { randomUUID } from 'node:crypto';
import { CloudWatchLogsClient, CreateLogGroupCommand } from '@aws-sdk/client-cloudwatch-logs';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeImagesCommand,
  EC2Client,
  RunInstancesCommand,
  StopInstancesCommand,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { DescribeTaskDefinitionCommand, DescribeTasksCommand, ECSClient } from '@aws-sdk/client-ecs';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { handler as getDiscovery } from '../../functions/api/get-discovery.ts';
import { handler as getInventory } from '../../functions/api/get-inventory.ts';
import { handler as refreshDiscovery } from '../../functions/api/refresh-discovery.ts';
import { handler as submitRun } from '../../functions/api/submit-run.ts';
import { handler as refreshSchedule } from '../../functions/discovery/refresh-discovery-schedule.ts';
import { handler as dispatchRuns } from '../../functions/dispatcher/dispatch-runs.ts';
import { parseEcsHandle } from '../../shared/adapters/ecs/handle.ts';
import { buildAwsDeps } from '../../shared/composition/aws.ts';
import type { HttpEvent } from '../../shared/http/handler.ts';
import { createRunTable, useMoto } from '../support/moto.ts';
import { sqsEvent } from '../support/sqs-event.ts';
import { ecsRunnerEnvironment, setUpEcsRunner } from './ecs-moto.ts';

/*
 * Discovery in the deployed stack: the Lambda entry points as Lambda calls
 * them, over the AWS composition root, against moto's EC2 and DynamoDB. One
 * refresh (POST /discovery/refresh or the scheduled function) writes each
 * cloud's list to the runs table; GET /discovery, GET /inventory, submit and
 * dispatch — other functions, other cold starts in AWS — read it from there.
 *
 * moto differs from EC2 here: instances are `running` at once and stop at
 * once (EC2 passes through pending/stopping), and it checks no IAM (the
 * grants are pinned by test/infra/discovery-schedule.test.ts). ECS on moto as
 * in test/integration/aws-composition.test.ts: tasks frozen where RunTask
 * leaves them, no task really runs.
 */

const moto = useMoto();
const suffix = randomUUID().slice(0, 8);
const table = `runs-${suffix}`;
const bucket = `rw-assets-${suffix}`;
const logGroup = '/remote-worker/runs';
const runner = {
  cluster: 'remote-worker',
  family: 'remote-worker-ansible',
  image: 'example/ansible-runner:1',
};
const context = {
  functionName: 'rw-test',
  awsRequestId: 'req',
  getRemainingTimeInMillis: () => 30_000,
} as Context;

/** API Gateway's payload 2.0 for a body-only route, as an IAM-authorised caller sends it. */
function request(routeKey: string, body?: unknown): HttpEvent {
  const [method = 'GET', rawPath = '/'] = routeKey.split(' ');
  const json = body === undefined ? {} : { body: JSON.stringify(body) };
  return {
    version: '2.0',
    routeKey,
    rawPath,
    rawQueryString: '',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    isBase64Encoded: false,
    requestContext: {
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '203.0.113.9', userAgent: 'test' },
      requestId: randomUUID(),
      routeKey,
      authorizer: { iam: { userArn: 'arn:aws:iam::123456789012:role/ops' } },
    } as unknown as HttpEvent['requestContext'],
    ...json,
  };
}
const answer = (result: { statusCode?: number | undefined; body?: string | undefined }) => ({
  status: result.statusCode,
  body: JSON.parse(result.body ?? 'null'),
});

let ec2: EC2Client;
let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let ecs: ECSClient;
let dispatchQueueUrl = '';
let linuxImage = '';
const ids = { web: '', stopped: '' };

async function launch(name: string): Promise<string> {
  const out = await ec2.send(
    new RunInstancesCommand({
      ImageId: linuxImage,
      MinCount: 1,
      MaxCount: 1,
      TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'Name', Value: name }] }],
    }),
  );
  return out.Instances?.[0]?.InstanceId ?? '';
}

beforeAll(async () => {
  const config = moto().clientConfig();
  ec2 = new EC2Client(config);
  dynamodb = new DynamoDBClient(config);
  sqs = new SQSClient(config);
  ecs = new ECSClient(config);
  await createRunTable(dynamodb, table);
  dispatchQueueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'rw-dispatch' }))).QueueUrl ?? '';
  const s3 = new S3Client(moto().s3ClientConfig());
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'hello/site.yml', Body: '- hosts: all\n' }));
  s3.destroy();
  const logs = new CloudWatchLogsClient(config);
  await logs.send(new CreateLogGroupCommand({ logGroupName: logGroup }));
  logs.destroy();
  const network = await setUpEcsRunner(ecs, moto().endpoint, runner);
  const secrets = new SecretsManagerClient(config);
  await secrets.send(new CreateSecretCommand({ Name: 'rw/ssh-key', SecretString: 'ssh-key-canary' }));
  secrets.destroy();

  const images = (await ec2.send(new DescribeImagesCommand({}))).Images ?? [];
  linuxImage = images.find((i) => i.Platform === undefined && i.ImageId !== undefined)?.ImageId ?? '';
  ids.web = await launch('web-prod-1');
  ids.stopped = await launch('batch-idle');
  await ec2.send(new StopInstancesCommand({ InstanceIds: [ids.stopped] }));

  // The environment the stack gives every function (infra/function-environment.ts), pointed at moto.
  for (const [key, value] of Object.entries({
    ...moto().env(),
    RUNS_TABLE: table,
    DISPATCH_QUEUE_URL: dispatchQueueUrl,
    ASSET_BUCKET: bucket,
    LOG_GROUP: logGroup,
    LOG_LEVEL: 'SILENT',
    ...ecsRunnerEnvironment(runner, network, 'rw/ssh-key'),
    ECS_TASK_FAMILY_PREFIX: 'rw-discovery-run-',
    DISCOVERY_CLOUDS: 'aws',
    DISCOVERY_AWS_REGIONS: 'us-east-1',
  })) {
    vi.stubEnv(key, value);
  }
});

afterAll(() => {
  vi.unstubAllEnvs();
  for (const client of [ec2, dynamodb, sqs, ecs]) client?.destroy();
});

describe('cloud VM discovery in the deployed stack (EC2 and DynamoDB on moto)', () => {
  it('answers every listed cloud with no VMs before the first refresh', async () => {
    const listed = answer(await getDiscovery(request('GET /discovery'), context));

    expect(listed).toEqual({ status: 200, body: { clouds: { aws: { count: 0 } }, vms: [] } });
  });

  it('refreshes into one runs-table item per cloud, which GET /discovery and GET /inventory read back', async () => {
    const refreshed = answer(await refreshDiscovery(request('POST /discovery/refresh'), context));
    const { Item } = await dynamodb.send(
      new GetItemCommand({
        TableName: table,
        Key: { pk: { S: 'DISCOVERY#aws' }, sk: { S: 'DISCOVERY' } },
      }),
    );
    const listed = answer(await getDiscovery(request('GET /discovery'), context));
    const inventory = answer(await getInventory(request('GET /inventory'), context));

    expect(refreshed.status).toBe(200);
    expect(refreshed.body.clouds.aws).toEqual({ count: 2, refreshedAt: expect.any(String) });
    expect(Item?.vmCount?.N).toBe('2');
    expect(Item?.rows?.B).toBeInstanceOf(Uint8Array);
    expect(listed.body).toEqual(refreshed.body);
    const byId = Object.fromEntries(listed.body.vms.map((v: any) => [v.cloudId, v]));
    expect(byId[ids.web]).toMatchObject({ id: `aws-${ids.web}`, name: 'web-prod-1', state: 'running' });
    expect(byId[ids.web].untargetableReason).toBeUndefined();
    expect(byId[ids.stopped].untargetableReason).toBe(
      'The VM is stopped, not running: start it in aws and refresh discovery to target it',
    );
    expect(inventory.body.discovered_aws.hosts).toEqual([`aws-${ids.web}`]);
  });

  it('accepts a run on a discovered EC2 VM and dispatches it as an ECS task with the AWS SSH key by reference', async () => {
    const submitted = answer(
      await submitRun(
        request('POST /runs', { kind: 'vm', targetId: `aws-${ids.web}`, asset: 'hello/site.yml' }),
        context,
      ),
    );
    expect(submitted).toMatchObject({ status: 202, body: { state: 'queued', runner: 'ecs' } });
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: dispatchQueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 5 }),
    );
    const mine = Messages.filter((m) => JSON.parse(m.Body ?? '{}').runId === submitted.body.id);

    const dispatched = await dispatchRuns(sqsEvent(mine), context);

    expect(dispatched).toEqual({ batchItemFailures: [] });
    const { Item } = await dynamodb.send(
      new GetItemCommand({
        TableName: table,
        Key: { pk: { S: `RUN#${submitted.body.id}` }, sk: { S: 'RUN' } },
      }),
    );
    const run = JSON.parse(Item?.body?.S ?? '{}');
    expect(run).toMatchObject({ state: 'launched', launch: { backend: 'ecs' } });
    const taskArn = parseEcsHandle(run.launch.handle)?.taskArn ?? '';
    const { tasks = [] } = await ecs.send(
      new DescribeTasksCommand({ cluster: runner.cluster, tasks: [taskArn] }),
    );
    const env = tasks[0]?.overrides?.containerOverrides?.[0]?.environment ?? [];
    const spec = JSON.parse(env.find((e) => e.name === 'RW_TASK')?.value ?? '{}');
    // The discovered VM's private address is the host; the key is a reference in the shared revision that carries it.
    const listed = answer(await getDiscovery(request('GET /discovery'), context));
    const address = listed.body.vms.find((v: any) => v.cloudId === ids.web)?.privateAddress;
    expect(address).toMatch(/^10\./);
    expect(JSON.stringify(spec)).toContain(address);
    expect(tasks[0]?.taskDefinitionArn).toMatch(/:task-definition\/rw-discovery-run-shared-[0-9a-f]{16}:1$/);
    const { taskDefinition } = await ecs.send(
      new DescribeTaskDefinitionCommand({ taskDefinition: tasks[0]?.taskDefinitionArn ?? '' }),
    );
    const secrets = taskDefinition?.containerDefinitions?.[0]?.secrets ?? [];
    expect(secrets.map((x) => x.valueFrom)).toEqual([expect.stringContaining(':secret:rw/ssh-key')]);
    expect(JSON.stringify([tasks[0], taskDefinition])).not.toContain('ssh-key-canary');
  });

  it('refuses a run on the stopped VM with its reason, and a VM no refresh listed as not found', async () => {
    const stopped = answer(
      await submitRun(
        request('POST /runs', { kind: 'vm', targetId: `aws-${ids.stopped}`, asset: 'hello/site.yml' }),
        context,
      ),
    );
    const unknown = answer(
      await submitRun(
        request('POST /runs', { kind: 'vm', targetId: 'aws-i-0000000000000dead', asset: 'hello/site.yml' }),
        context,
      ),
    );

    expect(stopped.status).toBe(422);
    expect(stopped.body.detail).toBe(
      'The VM is stopped, not running: start it in aws and refresh discovery to target it',
    );
    expect(unknown).toMatchObject({
      status: 400,
      body: { detail: 'No target with id aws-i-0000000000000dead is registered' },
    });
  });

  it('is refreshed by the scheduled function: a terminated VM leaves the list, a new one joins it', async () => {
    const added = await launch('web-prod-2');
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [ids.stopped] }));

    const outcome = await refreshSchedule({}, context);

    expect(outcome).toEqual({ clouds: { aws: { count: 2, refreshedAt: expect.any(String) } } });
    const listed = answer(await getDiscovery(request('GET /discovery'), context));
    expect(listed.body.vms.map((v: any) => v.cloudId).sort()).toEqual([ids.web, added].sort());
  });

  it('keeps the previous list, with the error as the reason, when a cloud cannot be listed', async () => {
    // Another function's cold start whose EC2 endpoint refuses connections.
    vi.stubEnv('AWS_ENDPOINT_URL_EC2', 'http://127.0.0.1:9');
    const failing = buildAwsDeps(process.env);

    // Its EC2 client is made on the first refresh, from the environment then.
    const snapshot = await failing.discovery?.refresh();
    vi.stubEnv('AWS_ENDPOINT_URL_EC2', moto().endpoint);
    const listed = answer(await getDiscovery(request('GET /discovery'), context));

    expect(snapshot?.clouds.aws).toMatchObject({
      count: 2,
      error: expect.stringMatching(/^EC2 DescribeInstances in us-east-1 failed: /),
    });
    expect(listed.body.clouds.aws).toEqual(snapshot?.clouds.aws);
    expect(listed.body.vms).toHaveLength(2);
  });
});
