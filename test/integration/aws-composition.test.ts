import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import {
  CloudWatchLogsClient,
  CreateLogGroupCommand,
  CreateLogStreamCommand,
  PutLogEventsCommand,
} from '@aws-sdk/client-cloudwatch-logs';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { DescribeTasksCommand, ECSClient } from '@aws-sdk/client-ecs';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { CreateQueueCommand, type Message, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { apiEvent, CALLER } from '../../bench/support/aws-events.ts';
import { handler as getRun } from '../../functions/api/get-run.ts';
import { handler as getRunLogs } from '../../functions/api/get-run-logs.ts';
import { handler as healthz } from '../../functions/api/healthz.ts';
import { handler as putTarget } from '../../functions/api/put-target.ts';
import { handler as submitRun } from '../../functions/api/submit-run.ts';
import { handler as dispatchRuns } from '../../functions/dispatcher/dispatch-runs.ts';
import { DynamoLogStore } from '../../shared/adapters/dynamodb/log-store.ts';
import { parseEcsHandle } from '../../shared/adapters/ecs/handle.ts';
import { buildAwsDeps, readAwsEnvironment } from '../../shared/composition/aws.ts';
import { SettingsInvalidError, UnauthorizedError } from '../../shared/domain/errors.ts';
import { apiGatewayAuthenticator } from '../../shared/http/api-gateway-auth.ts';
import { createRunTable, useMoto } from '../support/moto.ts';
import { sqsEvent } from '../support/sqs-event.ts';
import { ecsRunnerEnvironment, setUpEcsRunner } from './ecs-moto.ts';

/*
 * The Lambda entry points as Lambda calls them — `handler(event, context)`
 * with the AWS composition root reading its environment — against moto.
 *
 * moto differences that matter here: none beyond those in
 * test/contract/aws.test.ts (DynamoDB indexes are read right after writes;
 * moto updates them synchronously, AWS a moment later — this file reads runs
 * by key only). API Gateway itself is not emulated: events are built by hand
 * in its payload 2.0 shape, with the authorizer context it would add.
 *
 * ECS on moto (see test/integration/ecs-launcher.test.ts for the full list):
 * tasks are frozen where RunTask leaves them (moto otherwise advances one step
 * per DescribeTasks), the container definition carries `memory`, and the
 * awsvpc configuration names a security group (moto answers an HTML 500
 * without one). No task really runs, so its awslogs stream is written here.
 */

const REPO = resolve(import.meta.dirname, '../..');
const moto = useMoto();

const names = {
  table: `runs-${randomUUID().slice(0, 8)}`,
  bucket: `rw-assets-${randomUUID().slice(0, 8)}`,
  logGroup: '/remote-worker/runs',
  cluster: 'remote-worker',
  family: 'remote-worker-ansible',
  image: 'example/ansible-runner:1',
};
let dispatchQueueUrl = '';
let relayQueueUrl = '';
let sqs: SQSClient;
let dynamodb: DynamoDBClient;
let ecs: ECSClient;
let logs: CloudWatchLogsClient;

const context = {
  functionName: 'remote-worker-test',
  awsRequestId: 'req-1',
  getRemainingTimeInMillis: () => 30_000,
} as unknown as Context;

async function receiveAll(queueUrl: string, waitSeconds = 5): Promise<Message[]> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: waitSeconds,
      MessageSystemAttributeNames: ['ApproximateReceiveCount', 'SentTimestamp'],
    }),
  );
  return Messages;
}

const body = (result: { body?: string | undefined }): any => JSON.parse(result.body ?? 'null');

beforeAll(async () => {
  const config = moto().clientConfig();
  sqs = new SQSClient(config);
  dynamodb = new DynamoDBClient(config);
  const s3 = new S3Client(moto().s3ClientConfig());
  logs = new CloudWatchLogsClient(config);
  ecs = new ECSClient(config);

  await createRunTable(dynamodb, names.table);
  dispatchQueueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'rw-dispatch' }))).QueueUrl ?? '';
  relayQueueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'rw-relay' }))).QueueUrl ?? '';
  await s3.send(new CreateBucketCommand({ Bucket: names.bucket }));
  await s3.send(
    new PutObjectCommand({ Bucket: names.bucket, Key: 'playbooks/hello/site.yml', Body: '- hosts: all\n' }),
  );
  await logs.send(new CreateLogGroupCommand({ logGroupName: names.logGroup }));
  s3.destroy();

  const network = await setUpEcsRunner(ecs, moto().endpoint, names);
  // The SSH key of AWS VMs (ansible_ssh_key_sm_name): the task gets it by reference.
  const secretsManager = new SecretsManagerClient(moto().clientConfig());
  await secretsManager.send(new CreateSecretCommand({ Name: 'rw/ssh-key', SecretString: 'ssh-key-canary' }));
  secretsManager.destroy();

  // The environment the CDK stack gives every function, pointed at moto through AWS_ENDPOINT_URL.
  for (const [key, value] of Object.entries({
    ...moto().env(),
    RUNS_TABLE: names.table,
    DISPATCH_QUEUE_URL: dispatchQueueUrl,
    RELAY_QUEUE_URL: relayQueueUrl,
    ASSET_BUCKET: names.bucket,
    ASSET_PREFIX: 'playbooks/',
    LOG_GROUP: names.logGroup,
    LOG_LEVEL: 'SILENT',
    AWS_LAMBDA_FUNCTION_NAME: 'remote-worker-test',
    // What the stack sets for the `ecs` runner (infra/function-environment.ts); ECS_CONTAINER_NAME and ECS_LOG_STREAM_PREFIX keep their defaults.
    ...ecsRunnerEnvironment(names, network, 'rw/ssh-key'),
    ECS_TASK_FAMILY_PREFIX: 'remote-worker-test-run-',
  })) {
    vi.stubEnv(key, value);
  }
});

afterAll(() => {
  vi.unstubAllEnvs();
  sqs?.destroy();
  dynamodb?.destroy();
  ecs?.destroy();
  logs?.destroy();
});

describe('Lambda handlers in AWS mode', () => {
  it('registers a target, accepts a run into DynamoDB and SQS, reads it back, and dispatches it to the relay', async () => {
    const put = await putTarget(
      apiEvent('PUT /targets/{id}', '/targets/web-1', {
        id: 'web-1',
        body: { kind: 'vm', cloud: 'local', name: 'web-1', address: '10.0.0.5', connection: 'ssh' },
      }),
      context,
    );
    expect(put.statusCode).toBe(201);

    const submitted = await submitRun(
      apiEvent('POST /runs', '/runs', { body: { kind: 'vm', targetId: 'web-1', asset: 'hello/site.yml' } }),
      context,
    );
    expect(submitted.statusCode).toBe(202);
    const run = body(submitted);
    expect(run).toMatchObject({ state: 'queued', runner: 'local' });

    // The run is an item in the table, written by the caller IAM identity API Gateway verified.
    const { Item } = await dynamodb.send(
      new GetItemCommand({ TableName: names.table, Key: { pk: { S: `RUN#${run.id}` }, sk: { S: 'RUN' } } }),
    );
    expect(Item?.state?.S).toBe('queued');
    expect(JSON.parse(Item?.body?.S ?? '{}')).toMatchObject({ id: run.id, requestedBy: CALLER });

    // …and its id is on the dispatch queue.
    const dispatchMessages = await receiveAll(dispatchQueueUrl);
    expect(dispatchMessages.map((m) => JSON.parse(m.Body ?? ''))).toEqual([{ runId: run.id }]);

    const read = await getRun(apiEvent('GET /runs/{id}', `/runs/${run.id}`, { id: run.id }), context);
    expect(read.statusCode).toBe(200);
    expect(body(read)).toMatchObject({ id: run.id, state: 'queued' });

    // Lambda's SQS event source delivers the message to the dispatcher.
    const result = await dispatchRuns(sqsEvent(dispatchMessages), context);
    expect(result).toEqual({ batchItemFailures: [] });

    const launched = body(
      await getRun(apiEvent('GET /runs/{id}', `/runs/${run.id}`, { id: run.id }), context),
    );
    expect(launched).toMatchObject({ id: run.id, state: 'launched' });
    const relayMessages = await receiveAll(relayQueueUrl);
    // The relay message carries the run's plan with the target dispatch read (ids, names, an address: no secret).
    expect(relayMessages.map((m) => JSON.parse(m.Body ?? ''))).toMatchObject([
      {
        runId: run.id,
        attempt: 1,
        plan: { kind: 'vm', targetId: 'web-1', asset: 'hello/site.yml', target: { id: 'web-1' } },
      },
    ]);
  });

  /** Submit through the API and hand the run's message to the dispatcher, as Lambda's SQS event source would. */
  async function submitAndDispatch(request: Record<string, unknown>): Promise<any> {
    const submitted = await submitRun(apiEvent('POST /runs', '/runs', { body: request }), context);
    expect(submitted.statusCode).toBe(202);
    const { id } = body(submitted);
    // Messages an earlier test received but did not delete come back after the visibility timeout.
    const messages = (await receiveAll(dispatchQueueUrl)).filter(
      (m) => JSON.parse(m.Body ?? '').runId === id,
    );
    expect(messages).toHaveLength(1);

    const result = await dispatchRuns(sqsEvent(messages), context);

    expect(result).toEqual({ batchItemFailures: [] });
    return body(await getRun(apiEvent('GET /runs/{id}', `/runs/${id}`, { id }), context));
  }

  const readLogs = async (id: string): Promise<any> =>
    body(await getRunLogs(apiEvent('GET /runs/{id}/logs', `/runs/${id}/logs`, { id }), context));

  it("launches a run on an AWS-hosted VM as an ECS task and serves the task's awslogs stream as its output", async () => {
    const put = await putTarget(
      apiEvent('PUT /targets/{id}', '/targets/app-1', {
        id: 'app-1',
        body: { kind: 'vm', cloud: 'aws', name: 'app-1', address: '10.1.2.3', connection: 'ssh' },
      }),
      context,
    );
    expect(put.statusCode).toBe(201);

    const run = await submitAndDispatch({ kind: 'vm', targetId: 'app-1', asset: 'hello/site.yml' });

    expect(run).toMatchObject({
      state: 'launched',
      runner: 'ecs',
      launch: { backend: 'ecs', handle: expect.stringMatching(/^ecs:remote-worker\/arn:aws:ecs:/) },
    });
    const taskArn = parseEcsHandle(run.launch.handle)?.taskArn ?? '';
    const { tasks = [] } = await ecs.send(
      new DescribeTasksCommand({ cluster: names.cluster, tasks: [taskArn] }),
    );
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({
      startedBy: `rw/${run.id}/1`,
      group: `rw:${run.id}:1`,
      // The shared revision that adds the deployment's SSH key as a secret reference, reused by
      // every run with the same references (was: a revision of its own per run, before issue 16).
      taskDefinitionArn: expect.stringMatching(
        /:task-definition\/remote-worker-test-run-shared-[0-9a-f]{16}:\d+$/,
      ),
    });
    const overrides = tasks[0]?.overrides?.containerOverrides ?? [];
    expect(overrides.map((o) => o.name)).toEqual(['runner']);
    const spec = overrides[0]?.environment?.find((e) => e.name === 'RW_TASK')?.value ?? '{}';
    expect(JSON.parse(spec)).toMatchObject({ runId: run.id, kind: 'vm', secretVars: [] });

    // What the awslogs driver would write: `<ECS_LOG_STREAM_PREFIX>/<ECS_CONTAINER_NAME>/<task id>`.
    const stream = `run/runner/${taskArn.split('/').at(-1)}`;
    await logs.send(new CreateLogStreamCommand({ logGroupName: names.logGroup, logStreamName: stream }));
    await logs.send(
      new PutLogEventsCommand({
        logGroupName: names.logGroup,
        logStreamName: stream,
        logEvents: [
          { timestamp: Date.now(), message: 'PLAY [all]' },
          { timestamp: Date.now(), message: 'ok: [10.1.2.3]' },
        ],
      }),
    );
    const page = await readLogs(run.id);
    expect(page).toMatchObject({ runId: run.id, state: 'launched', complete: false });
    expect(page.lines.map((l: { text: string }) => l.text)).toEqual(['PLAY [all]', 'ok: [10.1.2.3]']);
  });

  it("serves a relay run's output, which the relay writes to the runs table, from GET /runs/{id}/logs", async () => {
    await putTarget(
      apiEvent('PUT /targets/{id}', '/targets/web-2', {
        id: 'web-2',
        body: { kind: 'vm', cloud: 'local', name: 'web-2', address: '10.0.0.6', connection: 'ssh' },
      }),
      context,
    );
    const run = await submitAndDispatch({ kind: 'vm', targetId: 'web-2', asset: 'hello/site.yml' });
    expect(run).toMatchObject({ state: 'launched', launch: { backend: 'local' } });

    // What the relay agent does with its output (runners/relay: LOGS_TABLE, default RUNS_TABLE).
    await new DynamoLogStore({ client: dynamodb, tableName: names.table }).append(run.id, [
      { stream: 'stdout', text: 'PLAY [all]' },
      { stream: 'stderr', text: '[WARNING]: no inventory' },
    ]);
    const page = await readLogs(run.id);

    expect(page).toMatchObject({ runId: run.id, state: 'launched', complete: false });
    expect(
      page.lines.map(({ stream, text }: { stream: string; text: string }) => ({ stream, text })),
    ).toEqual([
      { stream: 'stdout', text: 'PLAY [all]' },
      { stream: 'stderr', text: '[WARNING]: no inventory' },
    ]);
  });

  it('refuses a run whose asset is not in the bucket, writing nothing', async () => {
    const answer = await submitRun(
      apiEvent('POST /runs', '/runs', {
        body: { kind: 'vm', targetId: 'web-1', asset: 'hello/missing.yml' },
      }),
      context,
    );

    expect(answer.statusCode).toBe(422);
    expect(body(answer)).toMatchObject({ type: expect.stringContaining('asset-not-found') });
    expect(await receiveAll(dispatchQueueUrl, 1)).toEqual([]);
  });

  it('answers 401 problem+json to a request with no IAM or JWT identity, and serves /healthz without one', async () => {
    const denied = await getRun(apiEvent('GET /runs/{id}', '/runs/x', { id: 'x', authorizer: {} }), context);
    const health = await healthz(apiEvent('GET /healthz', '/healthz', { authorizer: {} }), context);

    expect(denied.statusCode).toBe(401);
    expect(denied.headers?.['content-type']).toBe('application/problem+json');
    expect(health.statusCode).toBe(200);
  });
});

describe('apiGatewayAuthenticator', () => {
  const authenticate = apiGatewayAuthenticator();

  it('takes the IAM caller ARN, or the JWT subject', async () => {
    expect(await authenticate(apiEvent('GET /runs', '/runs'))).toBe(CALLER);
    expect(
      await authenticate(
        apiEvent('GET /runs', '/runs', { authorizer: { jwt: { claims: { sub: 'user-42' }, scopes: null } } }),
      ),
    ).toBe('user-42');
  });

  it('refuses a Lambda authorizer, an empty identity and no authorizer with UnauthorizedError', async () => {
    for (const authorizer of [
      { lambda: { user: 'x' } },
      { iam: { userArn: '' } },
      { jwt: { claims: {} } },
      null,
    ]) {
      await expect(
        authenticate(apiEvent('GET /runs', '/runs', { authorizer })),
        JSON.stringify(authorizer),
      ).rejects.toBeInstanceOf(UnauthorizedError);
    }
  });
});

describe('AWS composition root', () => {
  const complete = {
    RUNS_TABLE: 'runs',
    DISPATCH_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/rw-dispatch',
    ASSET_BUCKET: 'rw-assets',
    LOG_GROUP: '/remote-worker/runs',
  };

  it('lists every missing variable and bad setting in one error', () => {
    const error = (() => {
      try {
        readAwsEnvironment({ DISPATCH_QUEUE_URL: 'not a url', ANSIBLE_RUNNER: 'nowhere' });
      } catch (e) {
        return e;
      }
      return undefined;
    })();

    expect(error).toBeInstanceOf(SettingsInvalidError);
    const paths = (error as SettingsInvalidError).problems.map((p) => p.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'RUNS_TABLE',
        'DISPATCH_QUEUE_URL',
        'ASSET_BUCKET',
        'LOG_GROUP',
        'ansible_runner',
      ]),
    );
    expect((error as Error).message).toContain('RUNS_TABLE: is not set: give the DynamoDB runs table name');
  });

  it('makes the relay unavailable, with the reason, when RELAY_QUEUE_URL is unset or empty', () => {
    for (const relay of [{}, { RELAY_QUEUE_URL: '' }]) {
      const deps = buildAwsDeps({ ...complete, ...relay, LOG_LEVEL: 'SILENT' });

      expect(deps.launchers.local).toBeUndefined();
      expect(deps.relay).toEqual({
        available: false,
        reason: 'this deployment has no on-prem relay (RELAY_QUEUE_URL is not set)',
      });
    }
  });

  it('makes ECS unavailable, naming what is missing, when the cluster, subnet or task definitions are not set', () => {
    const deps = buildAwsDeps({ ...complete, ANSIBLE_ECS_CLUSTER: 'remote-worker', LOG_LEVEL: 'SILENT' });

    expect(deps.launchers.ecs).toBeUndefined();
    expect(deps.unavailable.ecs).toBe(
      'ECS is not configured in this deployment (ansible_ecs_subnet_id, ECS_TASK_DEFINITIONS not set)',
    );
  });

  it('registers the ECS launcher when the cluster, a subnet and task definitions are set', () => {
    const deps = buildAwsDeps({
      ...complete,
      ANSIBLE_ECS_CLUSTER: 'remote-worker',
      ANSIBLE_ECS_SUBNET_ID: 'subnet-1,subnet-2',
      ECS_TASK_DEFINITIONS: '{"chrweav/ansible-cloud":"remote-worker-ansible-cloud"}',
      ECS_CONTAINER_NAME: 'ansible',
      LOG_LEVEL: 'SILENT',
    });

    expect(deps.launchers.ecs?.backend).toBe('ecs');
    expect(deps.unavailable.ecs).toBeUndefined();
    expect(deps.ecsContainerName).toBe('ansible');
  });

  it('registers ACI and Cloud Run from their settings, and says which settings the others lack', () => {
    const none = buildAwsDeps({ ...complete, LOG_LEVEL: 'SILENT' });
    expect(none.launchers.aci).toBeUndefined();
    expect(none.launchers.gcp).toBeUndefined();
    expect(none.unavailable.gcp).toBe(
      'Ansible Cloud Run runner is not configured: set gcp_project_id, gcp_region',
    );
    expect(none.unavailable.kubernetes).toContain('set kubernetes_kubeconfig');

    const half = buildAwsDeps({ ...complete, AZURE_RESOURCE_GROUP: 'rg-runners', LOG_LEVEL: 'SILENT' });
    expect(half.unavailable.aci).toBe(
      'Ansible ACI runner is not configured: set azure_subscription_id, azure_location',
    );

    const both = buildAwsDeps({
      ...complete,
      AZURE_RESOURCE_GROUP: 'rg-runners',
      AZURE_SUBSCRIPTION_ID: '00000000-0000-0000-0000-000000000000',
      AZURE_LOCATION: 'westeurope',
      GCP_PROJECT_ID: 'my-project',
      GCP_ANSIBLE_CLOUD_RUN_REGION: 'europe-west1',
      LOG_LEVEL: 'SILENT',
    });
    expect(both.launchers.aci?.backend).toBe('aci');
    expect(both.launchers.gcp?.backend).toBe('gcp');
    expect(both.unavailable).not.toHaveProperty('aci');
    expect(both.unavailable).not.toHaveProperty('gcp');
  });

  it('says what ECS_TASK_DEFINITIONS must hold when it is not a JSON map of image to task definition', () => {
    for (const value of ['remote-worker-ansible', '["a"]', '{"chrweav/ansible-cloud": 3}']) {
      expect(() => readAwsEnvironment({ ...complete, ECS_TASK_DEFINITIONS: value }), value).toThrow(
        /ECS_TASK_DEFINITIONS: must be a JSON object mapping each runner image to its ECS task definition/,
      );
    }
  });

  it('registers the relay launcher when RELAY_QUEUE_URL is set', () => {
    const deps = buildAwsDeps({
      ...complete,
      RELAY_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/rw-relay',
      LOG_LEVEL: 'SILENT',
    });

    expect(deps.launchers.local?.backend).toBe('local');
    expect(deps.relay).toEqual({ available: true });
    expect(deps.dispatchQueue.name).toBe('rw-dispatch');
  });
});

describe('local mode and the AWS SDK', () => {
  /**
   * A resolve hook in a child process records every module URL under
   * node_modules/@aws-sdk. Loading the entry files must record none; loading
   * the AWS composition root afterwards must record some, which proves the
   * hook sees SDK loads at all.
   */
  it('loads no @aws-sdk module when the API, dispatcher and status-sync entries are imported', async () => {
    const hook = `
      import { writeSync } from 'node:fs';
      export async function resolve(specifier, context, next) {
        const result = await next(specifier, context);
        if (result.url.includes('/node_modules/@aws-sdk/')) writeSync(2, 'AWS-SDK ' + result.url + '\\n');
        return result;
      }`;
    const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
    const script = `
      import { writeSync } from 'node:fs';
      await import('./functions/api/routes.ts');
      await import('./functions/dispatcher/dispatch-runs.ts');
      await import('./functions/dispatcher/settle-dead-letters.ts');
      await import('./functions/status-sync/ecs-task-state-change.ts');
      await import('./functions/status-sync/reconcile-runs.ts');
      writeSync(2, 'MARK entries loaded\\n');
      await import('./shared/composition/aws.ts');
      writeSync(2, 'MARK composition loaded\\n');`;

    const stderr = await new Promise<string>((ok, fail) => {
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          '--import',
          `data:text/javascript,${encodeURIComponent(register)}`,
          '--input-type=module',
          '-e',
          script,
        ],
        { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let err = '';
      child.stderr.on('data', (chunk: Buffer) => {
        err += chunk.toString();
      });
      child.once('error', fail);
      child.once('exit', (code) => (code === 0 ? ok(err) : fail(new Error(`child exited ${code}:\n${err}`))));
    });

    const lines = stderr.split('\n');
    const entries = lines.indexOf('MARK entries loaded');
    const composition = lines.indexOf('MARK composition loaded');
    expect(entries).toBeGreaterThanOrEqual(0);
    expect(composition).toBeGreaterThan(entries);
    expect(lines.slice(0, entries).filter((l) => l.startsWith('AWS-SDK '))).toEqual([]);
    expect(lines.slice(entries, composition).some((l) => l.startsWith('AWS-SDK '))).toBe(true);
  }, 60_000);
});
