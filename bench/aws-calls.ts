import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { CloudWatchLogsClient, CreateLogGroupCommand } from '@aws-sdk/client-cloudwatch-logs';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ECSClient } from '@aws-sdk/client-ecs';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { CreateQueueCommand, type Message, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { makeGetRun } from '../functions/api/get-run.ts';
import { makeSubmitRun } from '../functions/api/submit-run.ts';
import { makeDispatchRuns } from '../functions/dispatcher/dispatch-runs.ts';
import { makeEcsTaskStateChange } from '../functions/status-sync/ecs-task-state-change.ts';
import { RelayAgent } from '../runners/relay/agent.ts';
import { awslogsStreamName, CloudWatchLogReader } from '../shared/adapters/cloudwatch-logs/log-reader.ts';
import { DynamoLogStore } from '../shared/adapters/dynamodb/log-store.ts';
import { DynamoRunStore } from '../shared/adapters/dynamodb/run-store.ts';
import { DynamoTargetStore } from '../shared/adapters/dynamodb/target-store.ts';
import { ecsNetworkFromSettings } from '../shared/adapters/ecs/config.ts';
import { parseEcsHandle } from '../shared/adapters/ecs/handle.ts';
import { EcsLauncher } from '../shared/adapters/ecs/launcher.ts';
import { describeSecretArn } from '../shared/adapters/ecs/secret-arn.ts';
import { RelayLauncher } from '../shared/adapters/relay/relay-launcher.ts';
import { S3AssetStore } from '../shared/adapters/s3/asset-store.ts';
import { SqsWorkQueue } from '../shared/adapters/sqs/work-queue.ts';
import { prepareTask } from '../shared/app/task-prep.ts';
import { buildAwsDeps } from '../shared/composition/aws.ts';
import { runTableDefinition } from '../shared/domain/run-table.ts';
import { apiGatewayAuthenticator } from '../shared/http/api-gateway-auth.ts';
import { systemClock } from '../shared/ports/clock.ts';
import type { Launcher } from '../shared/ports/launcher.ts';
import { ecsRunnerEnvironment, setUpEcsRunner } from '../test/integration/ecs-moto.ts';
import { sqsEvent } from '../test/support/sqs-event.ts';
import { apiEvent, context, ecsEvent } from './support/aws-events.ts';
import { CallCounter, printCallTable, sumOf } from './support/call-counter.ts';
import { startMoto } from './support/moto-server.ts';
import { noopExecutor } from './support/noop-executor.ts';
import { chunks, inParallel, quantile } from './support/stats.ts';

const BURST = Number(process.env.BENCH_BURST ?? 50);
const RELAY_RUNS = Number(process.env.BENCH_RELAY_RUNS ?? 50);
const RELAY_CONCURRENCY = Number(process.env.BENCH_RELAY_CONCURRENCY ?? 10);

// ---- moto ---------------------------------------------------------------------------------------

const moto = await startMoto();
process.once('exit', () => moto.child.kill('SIGKILL'));

const motoEnv = {
  AWS_ENDPOINT_URL: moto.endpoint,
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
  AWS_MAX_ATTEMPTS: '1',
};
Object.assign(process.env, motoEnv);

// ---- counted clients ----------------------------------------------------------------------------

const counter = new CallCounter();
const counted = <T extends { middlewareStack: object }>(service: string, client: T): T =>
  counter.count(service, client);
const measure = (work: () => Promise<void>) => counter.measure(work);

const clients = {
  dynamodb: counted('DynamoDB', new DynamoDBClient({})),
  sqs: counted('SQS', new SQSClient({})),
  s3: counted('S3', new S3Client({ forcePathStyle: true })),
  logs: counted('CloudWatchLogs', new CloudWatchLogsClient({})),
  ecs: counted('ECS', new ECSClient({})),
  secretsManager: counted('SecretsManager', new SecretsManagerClient({})),
};
/** The harness's own calls (setup, receiving as Lambda's event source would): not counted. */
const setup = {
  dynamodb: new DynamoDBClient({}),
  sqs: new SQSClient({}),
  s3: new S3Client({ forcePathStyle: true }),
  logs: new CloudWatchLogsClient({}),
  ecs: new ECSClient({}),
};

// ---- resources ----------------------------------------------------------------------------------

const names = {
  table: `runs-${randomUUID().slice(0, 8)}`,
  bucket: `rw-assets-${randomUUID().slice(0, 8)}`,
  logGroup: '/remote-worker/runs',
  cluster: 'remote-worker',
  family: 'remote-worker-ansible',
  image: 'example/ansible-runner:1',
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
const dispatchQueueUrl =
  (await setup.sqs.send(new CreateQueueCommand({ QueueName: 'rw-dispatch' }))).QueueUrl ?? '';
const relayQueueUrl =
  (await setup.sqs.send(new CreateQueueCommand({ QueueName: 'rw-relay' }))).QueueUrl ?? '';
await setup.s3.send(new CreateBucketCommand({ Bucket: names.bucket }));
await setup.s3.send(
  new PutObjectCommand({ Bucket: names.bucket, Key: 'playbooks/hello/site.yml', Body: '- hosts: all\n' }),
);
await setup.logs.send(new CreateLogGroupCommand({ logGroupName: names.logGroup }));
const network = await setUpEcsRunner(setup.ecs, moto.endpoint, names);
{
  const secrets = new SecretsManagerClient({});
  await secrets.send(new CreateSecretCommand({ Name: 'rw/ssh-key', SecretString: 'bench-ssh-key' }));
  secrets.destroy();
}

// ---- the composition, with counted clients ------------------------------------------------------

const env = {
  ...motoEnv,
  RUNS_TABLE: names.table,
  DISPATCH_QUEUE_URL: dispatchQueueUrl,
  RELAY_QUEUE_URL: relayQueueUrl,
  ASSET_BUCKET: names.bucket,
  ASSET_PREFIX: 'playbooks/',
  LOG_GROUP: names.logGroup,
  LOG_LEVEL: 'SILENT',
  AWS_LAMBDA_FUNCTION_NAME: 'remote-worker-bench',
  // The `ecs` runner's settings; AWS VMs get their SSH key (rw/ssh-key) by reference.
  ...ecsRunnerEnvironment(names, network, 'rw/ssh-key'),
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
  prepare: (run) =>
    prepareTask(
      {
        store,
        targets,
        assets,
        secrets: { get: () => Promise.reject(new Error('no secret values')) },
        settings: base.settings,
      },
      run,
      { resolveSecrets: false },
    ),
  secretArn: describeSecretArn(clients.secretsManager),
  logs: runLogs,
});
const relayQueue = new SqsWorkQueue({ client: clients.sqs, queueUrl: relayQueueUrl });
const relayLogs = new DynamoLogStore({ client: clients.dynamodb, tableName: names.table, clock });
/** When the dispatcher sent each relay run (ms, performance.now()). */
const relaySent = new Map<string, number>();
const relayLauncher = new RelayLauncher(relayQueue, relayLogs);
const timedRelay: Launcher = {
  backend: 'local',
  status: () => relayLauncher.status(),
  logs: (handle, run, cursor) => relayLauncher.logs(handle, run, cursor),
  cancel: () => relayLauncher.cancel(),
  cleanup: () => relayLauncher.cleanup(),
  async launch(request) {
    relaySent.set(request.run.id, performance.now());
    return relayLauncher.launch(request);
  },
};
const deps = {
  ...base,
  store,
  targets,
  assets,
  logs: runLogs,
  dispatchQueue: new SqsWorkQueue({ client: clients.sqs, queueUrl: dispatchQueueUrl }),
  launchers: { ecs: ecsLauncher, local: timedRelay },
  authenticate: apiGatewayAuthenticator(),
};

const submit = makeSubmitRun(deps);
const getRun = makeGetRun(deps);
const onEcsEvent = makeEcsTaskStateChange({ ...deps, containerName: 'runner' });

/** Lambda's event source receiving for the dispatcher: not counted. */
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

const parse = (r: { body?: string | undefined }) => JSON.parse(r.body ?? 'null');

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

/** Submit → dispatch → RUNNING → STOPPED(0) → GET, for `n` runs at once; each phase counted on its own. */
async function ecsLifecycle(n: number) {
  const phases: Record<string, Map<string, number>> = {};
  const ids: string[] = [];
  phases['POST /runs'] = await measure(() =>
    inParallel(
      Array.from({ length: n }, (_, i) => i),
      10,
      async () => {
        ids.push(await submitRun('app-aws'));
      },
    ),
  );
  const messages = await receive(dispatchQueueUrl, n);
  phases.dispatch = await measure(async () => {
    // One dispatcher container per batch of 10 (a BatchProcessor serves one invocation at a time).
    await Promise.all(chunks(messages, 10).map((batch) => makeDispatchRuns(deps)(sqsEvent(batch), context)));
  });
  const runs = await Promise.all(
    ids.map(async (id) => (await store.getRun(id)) ?? { id, launch: undefined }),
  );
  const tasks = runs.map((r) => ({ id: r.id, taskArn: parseEcsHandle(r.launch?.handle)?.taskArn ?? '' }));
  phases['ECS RUNNING event'] = await measure(() =>
    inParallel(tasks, 10, async (t) => {
      await onEcsEvent(ecsEvent(names.cluster, t.taskArn, t.id, 'RUNNING', 2));
    }),
  );
  phases['ECS STOPPED event'] = await measure(() =>
    inParallel(tasks, 10, async (t) => {
      await onEcsEvent(ecsEvent(names.cluster, t.taskArn, t.id, 'STOPPED', 3));
    }),
  );
  const states = new Map<string, number>();
  phases['GET /runs/{id}'] = await measure(() =>
    inParallel(ids, 10, async (id) => {
      const state = parse(await getRun(apiEvent('GET /runs/{id}', `/runs/${id}`, { id }), context)).state;
      states.set(state, (states.get(state) ?? 0) + 1);
    }),
  );
  return { phases, states };
}

const one = await ecsLifecycle(1);
const burst = await ecsLifecycle(BURST);

printCallTable(one, burst, BURST);

// ---- relay: enqueue → executor start ------------------------------------------------------------

const started = new Map<string, number>();
const noopExecutorForRelay = noopExecutor(started);
const workRoot = mkdtempSync(join(tmpdir(), 'rw-bench-relay-'));
const agent = new RelayAgent({
  id: 'bench-relay',
  store,
  targets,
  queue: relayQueue,
  logs: relayLogs,
  executor: noopExecutorForRelay,
  secrets: { get: async () => '' },
  assets,
  clock,
  logger: new Logger({ serviceName: 'relay-bench', logLevel: 'SILENT' }),
  workRoot,
  concurrency: RELAY_CONCURRENCY,
  pollWaitSeconds: 2,
});
await agent.start();

async function relayRuns(n: number, concurrent: boolean): Promise<number[]> {
  const ids: string[] = [];
  const one = async () => {
    const id = await submitRun('web-onprem');
    ids.push(id);
    const [message] = await receive(dispatchQueueUrl, 1);
    if (message !== undefined) await makeDispatchRuns(deps)(sqsEvent([message]), context);
    if (!concurrent) while (!started.has(id)) await sleep(1);
  };
  if (concurrent) {
    for (let i = 0; i < n; i++) {
      ids.push(await submitRun('web-onprem'));
    }
    const messages = await receive(dispatchQueueUrl, n);
    await Promise.all(chunks(messages, 10).map((batch) => makeDispatchRuns(deps)(sqsEvent(batch), context)));
  } else {
    for (let i = 0; i < n; i++) await one();
  }
  const deadline = Date.now() + 60_000;
  while (ids.some((id) => !started.has(id)) && Date.now() < deadline) await sleep(2);
  return ids.flatMap((id) => {
    const sent = relaySent.get(id);
    const at = started.get(id);
    return sent === undefined || at === undefined ? [] : [at - sent];
  });
}
const sequential = await relayRuns(Math.min(20, RELAY_RUNS), false);
let burstLatency: number[] = [];
const burstStart = performance.now();
const relayCalls = await measure(async () => {
  burstLatency = await relayRuns(RELAY_RUNS, true);
});
const burstMs = performance.now() - burstStart;
const fmt = (xs: readonly number[]) =>
  `n=${xs.length}: median ${quantile(xs, 0.5).toFixed(1)} ms, p95 ${quantile(xs, 0.95).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms`;
console.log(
  `relay enqueue (RelayLauncher SendMessage) → executor start, SQS long poll + DynamoDB claim, concurrency ${RELAY_CONCURRENCY}:`,
);
console.log(`  ${'one at a time'.padEnd(24)}${fmt(sequential)}`);
console.log(`  ${`${RELAY_RUNS} dispatched at once`.padEnd(24)}${fmt(burstLatency)}`);
console.log(
  `  burst: ${(sumOf(relayCalls) / RELAY_RUNS).toFixed(1)} AWS calls per run (submit + dispatch + relay claim/run/settle, all on one moto process) in ${burstMs.toFixed(0)} ms = ${((sumOf(relayCalls) / burstMs) * 1000).toFixed(0)} calls/s`,
);

await agent.stop(5000);
rmSync(workRoot, { recursive: true, force: true });
for (const c of [...Object.values(clients), ...Object.values(setup)]) c.destroy();
moto.child.kill('SIGKILL');
