import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ECSClient, ListTasksCommand } from '@aws-sdk/client-ecs';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import {
  ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { makeDispatchRuns, type SqsBatchHandler } from '../../functions/dispatcher/dispatch-runs.ts';
import { DynamoRunStore } from '../../shared/adapters/dynamodb/run-store.ts';
import { DynamoTargetStore } from '../../shared/adapters/dynamodb/target-store.ts';
import { parseEcsHandle } from '../../shared/adapters/ecs/handle.ts';
import { submitRun } from '../../shared/app/runs.ts';
import { buildAwsDeps } from '../../shared/composition/aws.ts';
import type { Run } from '../../shared/domain/run.ts';
import { decodeRunMessage } from '../../shared/domain/run-message.ts';
import type { Launcher } from '../../shared/ports/launcher.ts';
import type { RunStore } from '../../shared/ports/run-store.ts';
import { ecsRunnerEnvironment, setUpEcsRunner } from '../integration/ecs-moto.ts';
import { createRunTable, type MotoServer, oneRequestAtATime } from '../support/moto.ts';
import { sqsEvent } from '../support/sqs-event.ts';
import { mulberry32 } from './random.ts';

/*
 * The AWS dispatch path under at-least-once delivery and crashes, against
 * moto (SQS, DynamoDB, S3, Secrets Manager, ECS). Shared by
 * test/reliability/aws-redelivery.test.ts (CI size) and bench/reliability.ts.
 *
 * It extends test/integration/exactly-once-ecs.test.ts (one crash point,
 * exactly two deliveries, handed over by hand) in three ways:
 * - Delivery goes through the moto queue: every message is sent twice
 *   (SQS's duplicate), Lambda-sized batches are received by several dispatcher
 *   "containers" (each its own `buildAwsDeps` and `makeDispatchRuns`), a
 *   record that failed comes back after its visibility is reset, and a
 *   success is deleted — what the Lambda event source mapping does.
 * - A crash is injected after each step of `dispatchRun`, with no change to
 *   it: after the claim write (RunStore.claimRun, which records the launch
 *   intent in the same write; on a redelivery, the takeover in `updateRun`),
 *   after RunTask returned (the launcher), and after the `launched` write.
 *   Some runs crash twice, at two steps.
 * - A crash is either a throw (the record fails, the rest of the batch goes
 *   on) or a process exit: the container stops doing anything at that
 *   instant (every later store write or launch in it throws), the whole
 *   batch is redelivered, and a new container (a cold start) replaces it.
 *
 * Where moto differs from AWS (see also exactly-once-ecs.test.ts): it
 * ignores RunTask's `clientToken`, so two dispatchers of one run inside the
 * same ListTasks→RunTask window would make two tasks here, where AWS returns
 * the first. Only the token guards that window, so the driver never lets two
 * deliveries of one run be processed at the same instant (a message whose
 * run is in flight elsewhere is put back on the queue unprocessed); the
 * interleavings themselves are covered by the scheduler property test in
 * test/unit/app/dispatch.test.ts. Everything else — the claim, the intent,
 * adoption through ListTasks by startedBy — is exercised for real. Under
 * load moto now and then answers a call with werkzeug's HTML error page; the
 * driver's own queue calls (the event source mapping's, which AWS retries)
 * are retried then (`pollerCall`), the code under test's never are.
 */

/** `claim` is the claim write, which records the launch intent too (RunStore.claimRun), or a redelivery's takeover. */
export const CRASH_STEPS = ['claim', 'runTask', 'launched'] as const;
export type CrashStep = (typeof CRASH_STEPS)[number];

export interface RedeliveryOptions {
  readonly runs: number;
  readonly seed: number;
  /** Dispatcher containers working the queue at once. */
  readonly containers: number;
  readonly progress?: (line: string) => void;
}

export interface RedeliveryResult {
  readonly runs: number;
  /** Crashes that fired, by step and kind. */
  readonly crashes: Readonly<Record<CrashStep, { throw: number; exit: number }>>;
  /** Handler invocations (batches) and records delivered, duplicates and redeliveries included. */
  readonly invocations: number;
  readonly deliveries: number;
  readonly coldStarts: number;
  /** startedBy → task ARNs, for every task in the cluster. */
  readonly tasksByStartedBy: ReadonlyMap<string, readonly string[]>;
  readonly totalTasks: number;
  readonly finalRuns: readonly Run[];
  /** Messages still on the dispatch queue at the end (visible or not). */
  readonly leftOnQueue: number;
  readonly durationMs: number;
}

class SimulatedCrash extends Error {
  override readonly name = 'SimulatedCrash';
}

interface Crash {
  readonly step: CrashStep;
  readonly kind: 'throw' | 'exit';
}

const BATCH = 10;
const CALLER = 'arn:aws:iam::123456789012:role/ci-deployer';

const context = (n: number) =>
  ({
    functionName: 'remote-worker-dispatcher',
    awsRequestId: `req-${n}`,
    getRemainingTimeInMillis: () => 30_000,
  }) as unknown as Context;

/** Which step of dispatchRun a run-store write is, judged from the run before and after it. */
function stepOf(before: Run | undefined, after: Run): CrashStep | undefined {
  if (after.state === 'launched') return 'launched';
  if (after.state !== 'dispatching') return undefined;
  if (before?.owner !== after.owner) return 'claim';
  return undefined;
}

export async function awsRedelivery(moto: MotoServer, options: RedeliveryOptions): Promise<RedeliveryResult> {
  const say = options.progress ?? (() => {});
  const random = mulberry32(options.seed);
  const started = performance.now();
  const names = {
    table: `runs-${randomUUID().slice(0, 8)}`,
    bucket: `rw-assets-${randomUUID().slice(0, 8)}`,
    queue: `rw-dispatch-${randomUUID().slice(0, 8)}`,
    cluster: `remote-worker-${randomUUID().slice(0, 8)}`,
    family: 'remote-worker-ansible',
    image: 'example/ansible-runner:1',
    target: 'app-aws-1',
  };
  const config = moto.clientConfig();
  const sqs = new SQSClient(config);
  const ecs = new ECSClient(config);
  const dynamodb = oneRequestAtATime(new DynamoDBClient(config));
  const savedEnv = { ...process.env };
  try {
    await createRunTable(dynamodb, names.table);
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: names.queue }))).QueueUrl ?? '';
    const s3 = new S3Client(moto.s3ClientConfig());
    await s3.send(new CreateBucketCommand({ Bucket: names.bucket }));
    await s3.send(
      new PutObjectCommand({ Bucket: names.bucket, Key: 'playbooks/hello/site.yml', Body: '- hosts: all\n' }),
    );
    s3.destroy();
    const network = await setUpEcsRunner(ecs, moto.endpoint, names);
    const secretsManager = new SecretsManagerClient(config);
    await secretsManager
      .send(new CreateSecretCommand({ Name: 'rw/ssh-key', SecretString: 'ssh-key-canary' }))
      .catch(() => {}); // a second pass on the same moto finds it there
    secretsManager.destroy();

    // The dispatcher function's environment for the ecs runner (infra/function-environment.ts), pointed at moto.
    const env: Record<string, string> = {
      ...moto.env(),
      RUNS_TABLE: names.table,
      DISPATCH_QUEUE_URL: queueUrl,
      ASSET_BUCKET: names.bucket,
      ASSET_PREFIX: 'playbooks/',
      LOG_GROUP: '/remote-worker/runs',
      LOG_LEVEL: 'SILENT',
      AWS_LAMBDA_FUNCTION_NAME: 'remote-worker-dispatcher',
      // The `ecs` runner's settings; AWS VMs get their SSH key (rw/ssh-key) by reference.
      ...ecsRunnerEnvironment(names, network, 'rw/ssh-key'),
    };
    // The SDK clients buildAwsDeps creates read the endpoint and credentials from process.env.
    Object.assign(process.env, env);

    // One store for every container: moto's DynamoDB is not thread-safe (test/support/moto.ts).
    const sharedStore = new DynamoRunStore({ client: dynamodb, tableName: names.table });
    const sharedTargets = new DynamoTargetStore({ client: dynamodb, tableName: names.table });

    // Submit through the application service, as POST /runs does: one message each on the queue.
    const api = buildAwsDeps(env);
    await sharedTargets.putTarget({
      id: names.target,
      kind: 'vm',
      cloud: 'aws',
      name: names.target,
      address: '10.1.2.3',
      connection: 'ssh',
      createdAt: new Date(0).toISOString(),
      updatedAt: new Date(0).toISOString(),
    });
    const ids: string[] = [];
    for (let i = 0; i < options.runs; i++) {
      const { run } = await submitRun(
        { ...api, store: sharedStore, targets: sharedTargets },
        { kind: 'vm', targetId: names.target, asset: 'hello/site.yml', extraVars: {}, secrets: [] },
        CALLER,
      );
      if (run.state !== 'queued') throw new Error(`run ${run.id} was not queued: ${run.state} ${run.reason}`);
      ids.push(run.id);
    }

    // Crash plans: every step gets its share of runs; a third crash again at a second step; some never.
    const plans = new Map<string, Crash[]>();
    ids.forEach((id, i) => {
      const kind = (): Crash['kind'] => (random() < 0.5 ? 'throw' : 'exit');
      const plan: Crash[] = [];
      if (i % 5 !== 4) plan.push({ step: CRASH_STEPS[i % CRASH_STEPS.length] as CrashStep, kind: kind() });
      if (plan.length > 0 && random() < 1 / 3) {
        plan.push({
          step: CRASH_STEPS[Math.floor(random() * CRASH_STEPS.length)] as CrashStep,
          kind: kind(),
        });
      }
      plans.set(id, plan);
    });
    const crashes = Object.fromEntries(CRASH_STEPS.map((s) => [s, { throw: 0, exit: 0 }])) as Record<
      CrashStep,
      { throw: number; exit: number }
    >;

    /** One Lambda container: its own composition root; `dead` once a crash of kind exit fired in it. */
    interface Container {
      readonly handler: SqsBatchHandler;
      dead: boolean;
    }
    const fire = (container: Container, runId: string, step: CrashStep) => {
      const plan = plans.get(runId) ?? [];
      if (plan[0]?.step !== step) return;
      const crash = plan.shift() as Crash;
      crashes[step][crash.kind] += 1;
      if (crash.kind === 'exit') container.dead = true;
      throw new SimulatedCrash(`${crash.kind} after ${step} of ${runId}`);
    };
    const coldStart = (): Container => {
      const built = buildAwsDeps(env);
      const real = built.launchers.ecs;
      if (real === undefined) throw new Error(`no ecs launcher: ${JSON.stringify(built.unavailable)}`);
      const container = { dead: false } as Container;
      const alive = () => {
        if (container.dead) throw new SimulatedCrash('this container has exited');
      };
      const store: RunStore = {
        createRun: (run, o) => sharedStore.createRun(run, o),
        createRuns: (runs) => sharedStore.createRuns(runs),
        listRuns: (q) => sharedStore.listRuns(q),
        listActiveRuns: (limit) => sharedStore.listActiveRuns(limit),
        holdAccount: (account, runId, o) => sharedStore.holdAccount(account, runId, o),
        releaseAccount: (account, runId) => sharedStore.releaseAccount(account, runId),
        claimRelayRun: (runId, claim) => sharedStore.claimRelayRun(runId, claim),
        getRuns: (ids) => sharedStore.getRuns(ids),
        getRun: async (id) => {
          alive();
          return sharedStore.getRun(id);
        },
        async claimRun(id, claim) {
          alive();
          const got = await sharedStore.claimRun(id, claim);
          if (got?.claimed === true) fire(container, id, 'claim');
          return got;
        },
        // Never a step a crash is injected after (it only moves launched runs on).
        async advanceRun(id, advance) {
          alive();
          return sharedStore.advanceRun(id, advance);
        },
        async updateRun(run, expectedVersion) {
          alive();
          const before = await sharedStore.getRun(run.id);
          const written = await sharedStore.updateRun(run, expectedVersion);
          const step = stepOf(before, written);
          if (step !== undefined) fire(container, run.id, step);
          return written;
        },
      };
      const launcher: Launcher = {
        backend: real.backend,
        status: (handle, run) => real.status(handle, run),
        logs: (handle, run, cursor) => real.logs(handle, run, cursor),
        cancel: (handle, run, grace) => real.cancel(handle, run, grace),
        cleanup: (handle, run) => real.cleanup(handle, run),
        async launch(request) {
          alive();
          const handle = await real.launch(request);
          fire(container, request.run.id, 'runTask');
          return handle;
        },
      };
      Object.assign(container, {
        handler: makeDispatchRuns({
          ...built,
          store,
          targets: sharedTargets,
          launchers: { ...built.launchers, ecs: launcher },
        }),
      });
      return container;
    };

    // SQS's at-least-once: every message sent once more, as a separate copy.
    const originals = await receiveAll(sqs, queueUrl, options.runs);
    for (let i = 0; i < originals.length; i += BATCH) {
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: originals
            .slice(i, i + BATCH)
            .map((m, j) => ({ Id: String(j), MessageBody: m.Body ?? '' })),
        }),
      );
    }
    await setVisibility(sqs, queueUrl, originals, 0);

    const containers = Array.from({ length: options.containers }, coldStart);
    let coldStarts = containers.length;
    let invocations = 0;
    let deliveries = 0;
    /** Runs whose message a container is processing now: never two at once (see the file comment). */
    const inFlight = new Set<string>();
    let idleRounds = 0;

    await Promise.all(
      containers.map(async (_, slot) => {
        while (idleRounds < 3) {
          const { Messages = [] } = await pollerCall(() =>
            sqs.send(
              new ReceiveMessageCommand({
                QueueUrl: queueUrl,
                MaxNumberOfMessages: BATCH,
                WaitTimeSeconds: 1,
                VisibilityTimeout: 120,
                MessageSystemAttributeNames: ['SentTimestamp', 'ApproximateReceiveCount'],
              }),
            ),
          );
          if (Messages.length === 0) {
            if (inFlight.size === 0) idleRounds += 1;
            continue;
          }
          idleRounds = 0;
          const mine: Message[] = [];
          const back: Message[] = [];
          for (const m of Messages) {
            const runId = decodeRunMessage(m.Body ?? '')?.runId ?? '';
            if (inFlight.has(runId)) back.push(m);
            else {
              inFlight.add(runId);
              mine.push(m);
            }
          }
          await setVisibility(sqs, queueUrl, back, 0);
          if (mine.length === 0) continue;
          const container = containers[slot] as Container;
          invocations += 1;
          deliveries += mine.length;
          const { batchItemFailures } = await container.handler(sqsEvent(mine), context(invocations));
          // A process exit fails the whole invocation: Lambda redelivers every record, and starts a new container.
          const failed = container.dead
            ? new Set(mine.map((m) => m.MessageId))
            : new Set(batchItemFailures.map((f) => f.itemIdentifier));
          if (container.dead) {
            containers[slot] = coldStart();
            coldStarts += 1;
          }
          await deleteMessages(
            sqs,
            queueUrl,
            mine.filter((m) => !failed.has(m.MessageId)),
          );
          await setVisibility(
            sqs,
            queueUrl,
            mine.filter((m) => failed.has(m.MessageId)),
            0,
          );
          for (const m of mine) inFlight.delete(decodeRunMessage(m.Body ?? '')?.runId ?? '');
          if (invocations % 20 === 0) say(`${invocations} invocations, ${deliveries} deliveries`);
        }
      }),
    );

    const finalRuns: Run[] = [];
    for (const id of ids) finalRuns.push((await sharedStore.getRun(id)) as Run);
    const tasksByStartedBy = new Map<string, string[]>();
    let totalTasks = 0;
    for (const desiredStatus of ['RUNNING', 'STOPPED'] as const) {
      let nextToken: string | undefined;
      do {
        const page = await ecs.send(
          new ListTasksCommand({
            cluster: names.cluster,
            desiredStatus,
            ...(nextToken === undefined ? {} : { nextToken }),
          }),
        );
        totalTasks += page.taskArns?.length ?? 0;
        nextToken = page.nextToken;
      } while (nextToken !== undefined);
    }
    // What the launcher adopts through: ListTasks filtered by startedBy, for each run's attempt.
    for (const run of finalRuns) {
      const startedBy = `rw/${run.id}/${run.attempt}`;
      const arns: string[] = [];
      for (const desiredStatus of ['RUNNING', 'STOPPED'] as const) {
        const { taskArns = [] } = await ecs.send(
          new ListTasksCommand({ cluster: names.cluster, startedBy, desiredStatus }),
        );
        arns.push(...taskArns);
      }
      tasksByStartedBy.set(startedBy, arns);
    }
    const attributes = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    const leftOnQueue =
      Number(attributes.Attributes?.ApproximateNumberOfMessages ?? 0) +
      Number(attributes.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);

    return {
      runs: options.runs,
      crashes,
      invocations,
      deliveries,
      coldStarts,
      tasksByStartedBy,
      totalTasks,
      finalRuns,
      leftOnQueue,
      durationMs: performance.now() - started,
    };
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
    Object.assign(process.env, savedEnv);
    sqs.destroy();
    ecs.destroy();
    dynamodb.destroy();
  }
}

/** The task ARN a run's handle names, if it has one. */
export const taskOf = (run: Run) => parseEcsHandle(run.launch?.handle)?.taskArn;

async function receiveAll(sqs: SQSClient, queueUrl: string, count: number): Promise<Message[]> {
  const messages: Message[] = [];
  const until = Date.now() + 30_000;
  while (messages.length < count && Date.now() < until) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 600 }),
    );
    messages.push(...Messages);
  }
  if (messages.length !== count)
    throw new Error(`expected ${count} messages on the queue, got ${messages.length}`);
  return messages;
}

async function setVisibility(
  sqs: SQSClient,
  queueUrl: string,
  messages: readonly Message[],
  seconds: number,
) {
  for (let i = 0; i < messages.length; i += BATCH) {
    await pollerCall(() =>
      sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrl,
          Entries: messages.slice(i, i + BATCH).map((m, j) => ({
            Id: String(j),
            ReceiptHandle: m.ReceiptHandle ?? '',
            VisibilityTimeout: seconds,
          })),
        }),
      ),
    );
  }
}

async function deleteMessages(sqs: SQSClient, queueUrl: string, messages: readonly Message[]) {
  for (let i = 0; i < messages.length; i += BATCH) {
    await pollerCall(() =>
      sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: messages
            .slice(i, i + BATCH)
            .map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle ?? '' })),
        }),
      ),
    );
  }
}

/**
 * One of the driver's own queue calls, tried up to four times: the event
 * source mapping's poller retries a failed call on AWS, and moto under load
 * now and then answers one with an HTML error page. A fourth failure is real.
 */
async function pollerCall<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= 4) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}
