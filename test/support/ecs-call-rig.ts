import { randomUUID } from 'node:crypto';
import { CloudWatchLogsClient, CreateLogGroupCommand } from '@aws-sdk/client-cloudwatch-logs';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ECSClient } from '@aws-sdk/client-ecs';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { CreateQueueCommand, type Message, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { apiEvent, context, ecsEvent } from '../../bench/support/aws-events.ts';
import type { CallCounter } from '../../bench/support/call-counter.ts';
import { chunks, inParallel } from '../../bench/support/stats.ts';
import { makeGetRun } from '../../functions/api/get-run.ts';
import { makeSubmitRun } from '../../functions/api/submit-run.ts';
import { makeDispatchRuns } from '../../functions/dispatcher/dispatch-runs.ts';
import { makeEcsTaskStateChange } from '../../functions/status-sync/ecs-task-state-change.ts';
import { CloudWatchLogReader } from '../../shared/adapters/cloudwatch-logs/log-reader.ts';
import { awslogsStreamName } from '../../shared/adapters/cloudwatch-logs/stream-name.ts';
import { DynamoLaunchBudgets } from '../../shared/adapters/dynamodb/launch-budget.ts';
import { DynamoRunStore } from '../../shared/adapters/dynamodb/run-store.ts';
import { DynamoTargetStore } from '../../shared/adapters/dynamodb/target-store.ts';
import { ecsNetworkFromSettings } from '../../shared/adapters/ecs/config.ts';
import { parseEcsHandle } from '../../shared/adapters/ecs/handle.ts';
import { EcsLauncher } from '../../shared/adapters/ecs/launcher.ts';
import { describeSecretArn } from '../../shared/adapters/ecs/secret-arn.ts';
import { S3AssetStore } from '../../shared/adapters/s3/asset-store.ts';
import { SqsWorkQueue } from '../../shared/adapters/sqs/work-queue.ts';
import { prepareTask } from '../../shared/app/task-prep.ts';
import { buildAwsDeps } from '../../shared/composition/aws.ts';
import { buildLaunchGate } from '../../shared/composition/launch-budget.ts';
import { runTableDefinition } from '../../shared/domain/run-table.ts';
import { apiGatewayAuthenticator } from '../../shared/http/api-gateway-auth.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import type { Launcher } from '../../shared/ports/launcher.ts';
import { ecsRunnerEnvironment, setUpEcsRunner } from '../integration/ecs-moto.ts';
import { sqsEvent } from './sqs-event.ts';

/** The calls of each phase of a run's life, by `service.Operation`. */
export type Phases = Record<string, Map<string, number>>;

/** SDK client config for moto (test/support/moto.ts `clientConfig()` has this shape). */
export interface RigClientConfig {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly maxAttempts: number;
}

/**
 * AWS mode's handlers on moto with every SDK client they use counted: the
 * submit, dispatch, ECS status and read handlers over DynamoDB, SQS, S3,
 * CloudWatch Logs, ECS and Secrets Manager, for an AWS VM reached with the
 * deployment's SSH key (`ansible_ssh_key_sm_name`). The harness's own calls
 * (setup, the receives Lambda's event source would make) are not counted.
 * Shared by bench/aws-calls.ts (the figure) and
 * test/integration/ecs-call-count.test.ts (the same count, asserted).
 *
 * @example
 * const rig = await ecsCallRig(moto.clientConfig(), new CallCounter());
 * const { phases, states } = await rig.ecsLifecycle(1);
 */
export async function ecsCallRig(
  config: RigClientConfig,
  counter: CallCounter,
  /** The relay launcher, when the caller also runs relay runs (the bench's relay section). */
  relayFor?: (parts: {
    readonly sqs: SQSClient;
    readonly dynamodb: DynamoDBClient;
    readonly table: string;
    readonly relayQueueUrl: string;
  }) => Launcher,
) {
  const counted = <T extends { middlewareStack: object }>(service: string, client: T): T =>
    counter.count(service, client);
  const clients = {
    dynamodb: counted('DynamoDB', new DynamoDBClient(config)),
    sqs: counted('SQS', new SQSClient(config)),
    s3: counted('S3', new S3Client({ ...config, forcePathStyle: true })),
    logs: counted('CloudWatchLogs', new CloudWatchLogsClient(config)),
    ecs: counted('ECS', new ECSClient(config)),
    secretsManager: counted('SecretsManager', new SecretsManagerClient(config)),
  };
  const setup = {
    dynamodb: new DynamoDBClient(config),
    sqs: new SQSClient(config),
    s3: new S3Client({ ...config, forcePathStyle: true }),
    logs: new CloudWatchLogsClient(config),
    ecs: new ECSClient(config),
    secretsManager: new SecretsManagerClient(config),
  };

  const names = {
    table: `runs-${randomUUID().slice(0, 8)}`,
    bucket: `rw-assets-${randomUUID().slice(0, 8)}`,
    logGroup: `/remote-worker/runs-${randomUUID().slice(0, 8)}`,
    cluster: 'remote-worker',
    family: 'remote-worker-ansible',
    image: 'example/ansible-runner:1',
    sshKey: `rw/ssh-key-${randomUUID().slice(0, 8)}`,
  };
  const def = runTableDefinition();
  await setup.dynamodb.send(
    new CreateTableCommand({
      TableName: names.table,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: def.keySchema,
      AttributeDefinitions: def.attributeDefinitions,
      GlobalSecondaryIndexes: def.globalSecondaryIndexes,
    }),
  );
  const queue = async (name: string) =>
    (await setup.sqs.send(new CreateQueueCommand({ QueueName: `${name}-${randomUUID().slice(0, 8)}` })))
      .QueueUrl ?? '';
  const dispatchQueueUrl = await queue('rw-dispatch');
  const relayQueueUrl = await queue('rw-relay');
  await setup.s3.send(new CreateBucketCommand({ Bucket: names.bucket }));
  await setup.s3.send(
    new PutObjectCommand({ Bucket: names.bucket, Key: 'playbooks/hello/site.yml', Body: '- hosts: all\n' }),
  );
  await setup.logs.send(new CreateLogGroupCommand({ logGroupName: names.logGroup }));
  const network = await setUpEcsRunner(setup.ecs, config.endpoint, names);
  await setup.secretsManager.send(
    new CreateSecretCommand({ Name: names.sshKey, SecretString: 'rig-ssh-key' }),
  );

  const env = {
    AWS_ENDPOINT_URL: config.endpoint,
    AWS_REGION: config.region,
    RUNS_TABLE: names.table,
    DISPATCH_QUEUE_URL: dispatchQueueUrl,
    RELAY_QUEUE_URL: relayQueueUrl,
    ASSET_BUCKET: names.bucket,
    ASSET_PREFIX: 'playbooks/',
    LOG_GROUP: names.logGroup,
    LOG_LEVEL: 'SILENT',
    AWS_LAMBDA_FUNCTION_NAME: 'remote-worker-calls',
    // AWS VMs get the deployment's SSH key by reference, through the shared task definition revision.
    ...ecsRunnerEnvironment(names, network, names.sshKey),
  };
  const base = buildAwsDeps(env);
  const clock = systemClock;
  const store = new DynamoRunStore({ client: clients.dynamodb, tableName: names.table, clock });
  const targets = new DynamoTargetStore({ client: clients.dynamodb, tableName: names.table });
  const assets = new S3AssetStore({ client: clients.s3, bucket: names.bucket, prefix: 'playbooks/' });
  const runLogs = new CloudWatchLogReader({
    client: clients.logs,
    logGroup: names.logGroup,
    streamFor: async (runId) => {
      const run = await store.getRun(runId);
      const handle = parseEcsHandle(run?.launch?.handle);
      return handle === undefined ? undefined : awslogsStreamName('run', 'runner', handle.taskArn);
    },
  });
  const ecsLauncher = new EcsLauncher({
    ecs: clients.ecs,
    cluster: names.cluster,
    taskDefinitions: { [names.image]: names.family },
    containerName: 'runner',
    network: ecsNetworkFromSettings(base.settings) ?? {
      subnets: [],
      securityGroups: [],
      assignPublicIp: false,
    },
    prepare: (run, known) =>
      prepareTask(
        {
          store,
          targets,
          assets,
          secrets: { get: () => Promise.reject(new Error('no secret values')) },
          settings: base.settings,
        },
        run,
        { resolveSecrets: false, ...(known === undefined ? {} : { known }) },
      ),
    secretArn: describeSecretArn(clients.secretsManager),
    logs: runLogs,
  });
  const deps = {
    ...base,
    store,
    targets,
    assets,
    logs: runLogs,
    dispatchQueue: new SqsWorkQueue({ client: clients.sqs, queueUrl: dispatchQueueUrl }),
    // The ECS launch budget, shared through the runs table as deployed: its take is counted too.
    launchBudget: buildLaunchGate(
      base.settings,
      { account: '123456789012', region: 'us-east-1' },
      new DynamoLaunchBudgets({ client: clients.dynamodb, tableName: names.table }),
    ),
    launchers:
      relayFor === undefined
        ? { ecs: ecsLauncher }
        : {
            ecs: ecsLauncher,
            local: relayFor({
              sqs: clients.sqs,
              dynamodb: clients.dynamodb,
              table: names.table,
              relayQueueUrl,
            }),
          },
    authenticate: apiGatewayAuthenticator(),
  };
  const submit = makeSubmitRun(deps);
  const getRun = makeGetRun(deps);
  const onEcsEvent = makeEcsTaskStateChange({ ...deps, containerName: 'runner' });
  const parse = (r: { body?: string | undefined }) => JSON.parse(r.body ?? 'null');

  /** Lambda's event source receiving: not counted. */
  async function receive(queueUrl: string, n: number): Promise<Message[]> {
    const got: Message[] = [];
    while (got.length < n) {
      const { Messages = [] } = await setup.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 2 }),
      );
      if (Messages.length === 0) break;
      got.push(...Messages);
    }
    return got;
  }

  /** POST /runs of the example playbook against `targetId`; answers the run id. */
  async function submitRun(targetId: string): Promise<string> {
    const body = { kind: 'vm', targetId, asset: 'hello/site.yml' };
    return parse(await submit(apiEvent('POST /runs', '/runs', { body }), context)).id as string;
  }

  for (const [id, cloud, address] of [
    ['app-aws', 'aws', '10.1.2.3'],
    ['web-onprem', 'local', '10.0.0.5'],
  ] as const) {
    await targets.putTarget({
      ...{ id, kind: 'vm', cloud, name: id, address, connection: 'ssh' },
      ...{ createdAt: clock.now(), updatedAt: clock.now() },
    });
  }

  /** One dispatcher container per batch of 10 (a BatchProcessor serves one invocation at a time). */
  const dispatch = (messages: readonly Message[]) =>
    Promise.all(chunks([...messages], 10).map((batch) => makeDispatchRuns(deps)(sqsEvent(batch), context)));

  /** Submit → dispatch → RUNNING → STOPPED(0) → GET, for `n` runs at once; each phase counted on its own. */
  async function ecsLifecycle(n: number): Promise<{ phases: Phases; states: Map<string, number> }> {
    const phases: Phases = {};
    const ids: string[] = [];
    phases['POST /runs'] = await counter.measure(() =>
      inParallel(
        Array.from({ length: n }, (_, i) => i),
        10,
        async () => {
          ids.push(await submitRun('app-aws'));
        },
      ),
    );
    const messages = await receive(dispatchQueueUrl, n);
    phases.dispatch = await counter.measure(async () => {
      await dispatch(messages);
    });
    const runs = await Promise.all(
      ids.map(async (id) => (await store.getRun(id)) ?? { id, launch: undefined }),
    );
    const tasks = runs.map((r) => ({ id: r.id, taskArn: parseEcsHandle(r.launch?.handle)?.taskArn ?? '' }));
    phases['ECS RUNNING event'] = await counter.measure(() =>
      inParallel(tasks, 10, async (t) => {
        await onEcsEvent(ecsEvent(names.cluster, t.taskArn, t.id, 'RUNNING', 2));
      }),
    );
    phases['ECS STOPPED event'] = await counter.measure(() =>
      inParallel(tasks, 10, async (t) => {
        await onEcsEvent(ecsEvent(names.cluster, t.taskArn, t.id, 'STOPPED', 3));
      }),
    );
    const states = new Map<string, number>();
    phases['GET /runs/{id}'] = await counter.measure(() =>
      inParallel(ids, 10, async (id) => {
        const state = parse(await getRun(apiEvent('GET /runs/{id}', `/runs/${id}`, { id }), context)).state;
        states.set(state, (states.get(state) ?? 0) + 1);
      }),
    );
    return { phases, states };
  }

  return {
    names,
    clients,
    setup,
    deps,
    store,
    targets,
    assets,
    clock,
    dispatchQueueUrl,
    relayQueueUrl,
    receive,
    submitRun,
    dispatch,
    ecsLifecycle,
    close: () => {
      for (const c of [...Object.values(clients), ...Object.values(setup)]) c.destroy();
    },
  };
}
