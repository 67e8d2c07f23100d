/**
 * AWS mode against moto: AWS API calls per run from submit to a terminal
 * state, and relay enqueue → executor start latency. Prints figures; asserts
 * nothing.
 *
 *   npx tsx bench/aws-calls.ts          # BENCH_BURST=50 BENCH_RELAY_RUNS=50 by default
 *
 * Calls are counted by an SDK middleware (`initialize` step: one per
 * `client.send`, before retries; moto is asked with maxAttempts 1 anyway) on
 * every client the adapters use. `buildAwsDeps` keeps its clients private, so
 * the client-bound adapters are built here the way it builds them, with
 * counted clients; settings, logger, owner id and id source come from
 * `buildAwsDeps` itself. Not counted: what Lambda's SQS event source does
 * (ReceiveMessage, DeleteMessage of a successful record) and EventBridge.
 *
 * Flow per run: POST /runs → dispatcher (SQS event) → ECS "Task State Change"
 * RUNNING → STOPPED (exit 0) through the status-sync handler → GET /runs/{id}.
 * moto does not emit ECS events (nor advance tasks without DescribeTasks), so
 * the events are built here in EventBridge's shape.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
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
import type { Context, SQSEvent } from 'aws-lambda';
import { makeGetRun } from '../functions/api/get-run.ts';
import { makeSubmitRun } from '../functions/api/submit-run.ts';
import { makeDispatchRuns } from '../functions/dispatcher/dispatch-runs.ts';
import {
  ECS_TASK_STATE_CHANGE,
  type EcsTaskStateChangeEvent,
  makeEcsTaskStateChange,
} from '../functions/status-sync/ecs-task-state-change.ts';
import { RelayAgent } from '../runners/relay/agent.ts';
import { awslogsStreamName, CloudWatchLogReader } from '../shared/adapters/cloudwatch-logs/log-reader.ts';
import { DynamoLogStore } from '../shared/adapters/dynamodb/log-store.ts';
import { DynamoRunStore } from '../shared/adapters/dynamodb/run-store.ts';
import { runTableDefinition } from '../shared/adapters/dynamodb/table-layout.ts';
import { DynamoTargetStore } from '../shared/adapters/dynamodb/target-store.ts';
import { parseEcsHandle } from '../shared/adapters/ecs/handle.ts';
import { EcsLauncher, ecsNetworkFromSettings } from '../shared/adapters/ecs/launcher.ts';
import { describeSecretArn } from '../shared/adapters/ecs/secret-arn.ts';
import { RelayLauncher } from '../shared/adapters/relay/relay-launcher.ts';
import { S3AssetStore } from '../shared/adapters/s3/asset-store.ts';
import { SqsWorkQueue } from '../shared/adapters/sqs/work-queue.ts';
import { prepareTask } from '../shared/app/task-prep.ts';
import { buildAwsDeps } from '../shared/composition/aws.ts';
import { apiGatewayAuthenticator } from '../shared/http/api-gateway-auth.ts';
import type { HttpEvent } from '../shared/http/handler.ts';
import { systemClock } from '../shared/ports/clock.ts';
import type { Executor, RunningExecution } from '../shared/ports/executor.ts';
import type { Launcher } from '../shared/ports/launcher.ts';
import { setUpEcsRunner } from '../test/integration/ecs-moto.ts';

const BURST = Number(process.env.BENCH_BURST ?? 50);
const RELAY_RUNS = Number(process.env.BENCH_RELAY_RUNS ?? 50);
const RELAY_CONCURRENCY = Number(process.env.BENCH_RELAY_CONCURRENCY ?? 10);

// ---- moto ---------------------------------------------------------------------------------------

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });

async function startMoto(): Promise<{ endpoint: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`moto exited with ${child.exitCode}`);
    try {
      const res = await fetch(`${endpoint}/moto-api/data.json`);
      await res.arrayBuffer();
      if (res.ok) return { endpoint, child };
    } catch {
      // not up yet
    }
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error('moto did not start within 30 s');
}

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

/** `service.Operation` → calls, for the phase being measured. */
let counts = new Map<string, number>();
type CountingMiddleware = (
  next: (args: unknown) => Promise<unknown>,
  context: { commandName?: string },
) => (args: unknown) => Promise<unknown>;
const counted = <T extends { middlewareStack: object }>(service: string, client: T): T => {
  // Every client's stack takes an initialize-step middleware; their generic types differ per client.
  const stack = client.middlewareStack as { add(middleware: CountingMiddleware, options: object): void };
  stack.add(
    (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) => (args: unknown) => {
      const op = `${service}.${(context.commandName ?? '?').replace(/Command$/, '')}`;
      counts.set(op, (counts.get(op) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'benchCountCalls' },
  );
  return client;
};
const measure = async (work: () => Promise<void>): Promise<Map<string, number>> => {
  counts = new Map();
  await work();
  const taken = counts;
  counts = new Map();
  return taken;
};

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
  ECS_TASK_DEFINITIONS: JSON.stringify({ [names.image]: names.family }),
  ANSIBLE_RUNNER_AWS: 'ecs',
  ANSIBLE_LOCAL_IMAGE: names.image,
  ANSIBLE_ECS_CLUSTER: names.cluster,
  ANSIBLE_ECS_SUBNET_ID: network.subnet,
  ANSIBLE_ECS_SECURITY_GROUP_IDS: network.securityGroup,
  ANSIBLE_ECS_EXECUTION_ROLE_ARN: 'arn:aws:iam::123456789012:role/remote-worker-task-execution',
  // AWS VMs get their SSH key by reference: every run has its own task definition.
  ANSIBLE_SSH_KEY_SM_NAME: 'rw/ssh-key',
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

// ---- events -------------------------------------------------------------------------------------

const CALLER = 'arn:aws:iam::123456789012:role/bench';
const context = {
  functionName: 'bench',
  awsRequestId: 'req',
  getRemainingTimeInMillis: () => 30_000,
} as Context;

function apiEvent(routeKey: string, path: string, extra: { id?: string; body?: unknown } = {}): HttpEvent {
  const [method = 'GET'] = routeKey.split(' ');
  return {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString: '',
    headers: extra.body === undefined ? {} : { 'content-type': 'application/json' },
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'bench' },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
      authorizer: { iam: { userArn: CALLER } },
    } as HttpEvent['requestContext'],
    isBase64Encoded: false,
    ...(extra.id === undefined ? {} : { pathParameters: { id: extra.id } }),
    ...(extra.body === undefined ? {} : { body: JSON.stringify(extra.body) }),
  };
}

const sqsEvent = (messages: readonly Message[]): SQSEvent => ({
  Records: messages.map((m) => ({
    messageId: m.MessageId ?? '',
    receiptHandle: m.ReceiptHandle ?? '',
    body: m.Body ?? '',
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(Date.now()),
      SenderId: 'bench',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: m.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:rw-dispatch',
    awsRegion: 'us-east-1',
  })),
});

function ecsEvent(
  taskArn: string,
  runId: string,
  lastStatus: string,
  version: number,
): EcsTaskStateChangeEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': ECS_TASK_STATE_CHANGE,
    source: 'aws.ecs',
    account: '123456789012',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: [taskArn],
    detail: {
      taskArn,
      clusterArn: `arn:aws:ecs:us-east-1:123456789012:cluster/${names.cluster}`,
      lastStatus,
      version,
      startedBy: `rw/${runId}/1`,
      group: `rw:${runId}:1`,
      ...(lastStatus === 'STOPPED'
        ? { stopCode: 'EssentialContainerExited', containers: [{ name: 'runner', exitCode: 0 }] }
        : { containers: [{ name: 'runner' }] }),
    },
  };
}

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

const chunks = <T>(xs: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(xs.length / size) }, (_, i) => xs.slice(i * size, (i + 1) * size));

async function inParallel<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

const parse = (r: { body?: string | undefined }) => JSON.parse(r.body ?? 'null');

await targets.putTarget({
  id: 'app-aws',
  kind: 'vm',
  cloud: 'aws',
  name: 'app-aws',
  address: '10.1.2.3',
  connection: 'ssh',
  createdAt: clock.now(),
  updatedAt: clock.now(),
});
await targets.putTarget({
  id: 'web-onprem',
  kind: 'vm',
  cloud: 'local',
  name: 'web-onprem',
  address: '10.0.0.5',
  connection: 'ssh',
  createdAt: clock.now(),
  updatedAt: clock.now(),
});

/** Submit → dispatch → RUNNING → STOPPED(0) → GET, for `n` runs at once; each phase counted on its own. */
async function ecsLifecycle(n: number) {
  const phases: Record<string, Map<string, number>> = {};
  const ids: string[] = [];
  phases['POST /runs'] = await measure(() =>
    inParallel(
      Array.from({ length: n }, (_, i) => i),
      10,
      async () => {
        const answer = await submit(
          apiEvent('POST /runs', '/runs', {
            body: { kind: 'vm', targetId: 'app-aws', asset: 'hello/site.yml' },
          }),
          context,
        );
        ids.push(parse(answer).id);
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
      await onEcsEvent(ecsEvent(t.taskArn, t.id, 'RUNNING', 2));
    }),
  );
  phases['ECS STOPPED event'] = await measure(() =>
    inParallel(tasks, 10, async (t) => {
      await onEcsEvent(ecsEvent(t.taskArn, t.id, 'STOPPED', 3));
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

const total = (phases: Record<string, Map<string, number>>) => {
  const sum = new Map<string, number>();
  for (const m of Object.values(phases)) for (const [op, c] of m) sum.set(op, (sum.get(op) ?? 0) + c);
  return sum;
};
const perRun = (phases: Record<string, Map<string, number>>, n: number) => {
  const t = total(phases);
  return (op: string) => ((t.get(op) ?? 0) / n).toFixed(2);
};
const allOps = [...new Set([...total(one.phases).keys(), ...total(burst.phases).keys()])].sort();
const sumOf = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

console.log(
  `AWS mode on moto, ${process.version}: AWS API calls per run, POST /runs → terminal (ecs runner)`,
);
console.log(
  `final states: 1 run ${JSON.stringify(Object.fromEntries(one.states))}; burst ${JSON.stringify(Object.fromEntries(burst.states))}`,
);
const pad = (s: string, w: number) => s.padEnd(w);
const padL = (s: string, w: number) => s.padStart(w);
console.log(`${pad('service.operation', 36)}${padL('1 run', 8)}${padL(`${BURST}-run burst / run`, 22)}`);
const oneRun = perRun(one.phases, 1);
const burstRun = perRun(burst.phases, BURST);
for (const op of allOps) console.log(`${pad(op, 36)}${padL(oneRun(op), 8)}${padL(burstRun(op), 22)}`);
console.log(
  `${pad('total', 36)}${padL(String(sumOf(total(one.phases))), 8)}${padL((sumOf(total(burst.phases)) / BURST).toFixed(2), 22)}`,
);
console.log('by phase (calls per run):');
for (const phase of Object.keys(one.phases)) {
  const a = one.phases[phase] ?? new Map();
  const b = burst.phases[phase] ?? new Map();
  const ops = [...new Set([...a.keys(), ...b.keys()])]
    .sort()
    .map((op) => `${op} ${a.get(op) ?? 0}/${((b.get(op) ?? 0) / BURST).toFixed(2)}`);
  console.log(`  ${pad(phase, 20)} ${ops.join(', ')}`);
}

// ---- relay: enqueue → executor start ------------------------------------------------------------

const started = new Map<string, number>();
const noopExecutor: Executor = {
  name: 'process',
  async start(request): Promise<RunningExecution> {
    started.set(request.runId, performance.now());
    return { handle: `noop:${request.runId}`, done: Promise.resolve({ exitCode: 0 }), kill: async () => {} };
  },
  async adopt(handle) {
    return { handle, done: Promise.resolve({ exitCode: 0 }), kill: async () => {} };
  },
  reapOrphans: async () => [],
};
const workRoot = mkdtempSync(join(tmpdir(), 'rw-bench-relay-'));
const agent = new RelayAgent({
  id: 'bench-relay',
  store,
  targets,
  queue: relayQueue,
  logs: relayLogs,
  executor: noopExecutor,
  secrets: { get: async () => '' },
  assets,
  clock,
  logger: new Logger({ serviceName: 'relay-bench', logLevel: 'SILENT' }),
  workRoot,
  concurrency: RELAY_CONCURRENCY,
  pollWaitSeconds: 2,
});
await agent.start();

const quantile = (xs: readonly number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};
async function relayRuns(n: number, concurrent: boolean): Promise<number[]> {
  const ids: string[] = [];
  const one = async () => {
    const answer = await submit(
      apiEvent('POST /runs', '/runs', {
        body: { kind: 'vm', targetId: 'web-onprem', asset: 'hello/site.yml' },
      }),
      context,
    );
    const id = parse(answer).id as string;
    ids.push(id);
    const [message] = await receive(dispatchQueueUrl, 1);
    if (message !== undefined) await makeDispatchRuns(deps)(sqsEvent([message]), context);
    if (!concurrent) while (!started.has(id)) await sleep(1);
  };
  if (concurrent) {
    for (let i = 0; i < n; i++) {
      const answer = await submit(
        apiEvent('POST /runs', '/runs', {
          body: { kind: 'vm', targetId: 'web-onprem', asset: 'hello/site.yml' },
        }),
        context,
      );
      ids.push(parse(answer).id);
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
