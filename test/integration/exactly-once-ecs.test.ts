import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeTasksCommand, ECSClient, ListTasksCommand } from '@aws-sdk/client-ecs';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { CreateQueueCommand, type Message, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeDispatchRuns, type SqsBatchHandler } from '../../functions/dispatcher/dispatch-runs.ts';
import { DynamoRunStore } from '../../shared/adapters/dynamodb/run-store.ts';
import { DynamoTargetStore } from '../../shared/adapters/dynamodb/target-store.ts';
import { parseEcsHandle } from '../../shared/adapters/ecs/handle.ts';
import { submitRun } from '../../shared/app/runs.ts';
import { buildAwsDeps } from '../../shared/composition/aws.ts';
import { decodeRunMessage } from '../../shared/domain/run-message.ts';
import type { Launcher } from '../../shared/ports/launcher.ts';
import { createRunTable, oneRequestAtATime, useMoto } from '../support/moto.ts';
import { sqsEvent } from '../support/sqs-event.ts';
import { vmTarget } from '../unit/app/harness.ts';
import { ecsRunnerEnvironment, setUpEcsRunner } from './ecs-moto.ts';

/*
 * Exactly once on ECS, end to end against moto (DynamoDB, SQS, S3, ECS):
 * 200 runs submitted through `submitRun`, every dispatch message delivered
 * twice to the real dispatcher (`makeDispatchRuns` over `buildAwsDeps`), and
 * for three runs in four the first delivery "crashes" right after RunTask
 * returned, before the run's `launched` write. ECS must end with exactly one
 * task per run, and every run `launched` with that task's handle, attempt 1.
 *
 * Where moto differs from AWS, and what this file does about it:
 * - moto ignores `clientToken`: RunTask with the same token twice makes two
 *   tasks (AWS returns the first one for 24 h). So the single task per run
 *   proven here comes only from our own records plus the launcher's
 *   `ListTasks` by `startedBy` before RunTask (which moto honours). Because
 *   no emulator stands in for the token, the two deliveries of one message
 *   are processed one after the other (as SQS does after the visibility
 *   timeout), never at the same instant: two dispatchers inside the same
 *   ListTasks→RunTask window are covered on AWS by the token alone.
 * - moto does not advance task states with time, but one step per
 *   DescribeTasks call; they are frozen (`set-transition` manual) so the
 *   final DescribeTasks below sees them as RunTask left them.
 * - RunTask on moto needs `memory` on the container definition,
 *   `launchType: 'FARGATE'` and a security group in the awsvpc configuration
 *   (else an HTML 500).
 * - moto's DynamoDB is not thread-safe (test/support/moto.ts
 *   `oneRequestAtATime`); the dispatchers here share one run store whose
 *   client sends one request at a time, so the test exercises the store's
 *   conditional writes, not that moto bug. ECS, SQS and S3 calls stay
 *   concurrent. That store replaces the one `buildAwsDeps` made (its client
 *   is private); everything else is the composition root's own.
 * - Lambda's SQS event source is not emulated: the messages are received
 *   from the moto queue and handed to the handler in Lambda's event shape.
 */

const moto = useMoto();

const RUNS = 200;
/** Lambda containers working the queue at once; each is its own `buildAwsDeps` (own clients, own owner id). */
const CONTAINERS = 4;
const BATCH = 10;
const CALLER = 'arn:aws:iam::123456789012:role/ci-deployer';

const names = {
  table: `runs-${randomUUID().slice(0, 8)}`,
  bucket: `rw-assets-${randomUUID().slice(0, 8)}`,
  cluster: 'remote-worker',
  family: 'remote-worker-ansible',
  image: 'example/ansible-runner:1',
  target: 'app-aws-1',
};

let sqs: SQSClient;
let ecs: ECSClient;
let dynamodb: DynamoDBClient;
let dispatchQueueUrl = '';
let env: Record<string, string> = {};

const context = (n: number) =>
  ({
    functionName: 'remote-worker-dispatcher',
    awsRequestId: `req-${n}`,
    getRemainingTimeInMillis: () => 30_000,
  }) as unknown as Context;

/** Run `work` over `items` with at most `limit` in flight. */
async function inParallel<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T, worker: number) => Promise<R>,
) {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async (_, worker) => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i] as T, worker);
      }
    }),
  );
  return results;
}

const chunks = <T>(xs: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(xs.length / size) }, (_, i) => xs.slice(i * size, (i + 1) * size));

/** Every task in the cluster, desired RUNNING or STOPPED (ListTasks shows only RUNNING unless asked). */
async function allTaskArns(): Promise<string[]> {
  const arns = new Set<string>();
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
      for (const arn of page.taskArns ?? []) arns.add(arn);
      nextToken = page.nextToken;
    } while (nextToken !== undefined);
  }
  return [...arns];
}

async function tasksStartedBy(startedBy: string): Promise<string[]> {
  const arns = new Set<string>();
  for (const desiredStatus of ['RUNNING', 'STOPPED'] as const) {
    const { taskArns = [] } = await ecs.send(
      new ListTasksCommand({ cluster: names.cluster, startedBy, desiredStatus }),
    );
    for (const arn of taskArns) arns.add(arn);
  }
  return [...arns];
}

beforeAll(async () => {
  const config = moto().clientConfig();
  sqs = new SQSClient(config);
  ecs = new ECSClient(config);
  dynamodb = oneRequestAtATime(new DynamoDBClient(config));
  const s3 = new S3Client(moto().s3ClientConfig());

  await createRunTable(dynamodb, names.table);
  dispatchQueueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'rw-dispatch' }))).QueueUrl ?? '';
  await s3.send(new CreateBucketCommand({ Bucket: names.bucket }));
  await s3.send(
    new PutObjectCommand({ Bucket: names.bucket, Key: 'playbooks/hello/site.yml', Body: '- hosts: all\n' }),
  );
  s3.destroy();

  const network = await setUpEcsRunner(ecs, moto().endpoint, names);
  // AWS VMs get their SSH key by reference (ansible_ssh_key_sm_name): every run has its own task definition.
  const secretsManager = new SecretsManagerClient(moto().clientConfig());
  await secretsManager.send(new CreateSecretCommand({ Name: 'rw/ssh-key', SecretString: 'ssh-key-canary' }));
  secretsManager.destroy();

  // The stack's function environment (infra/function-environment.ts) for the `ecs` runner, pointed at moto.
  env = {
    ...moto().env(),
    RUNS_TABLE: names.table,
    DISPATCH_QUEUE_URL: dispatchQueueUrl,
    ASSET_BUCKET: names.bucket,
    ASSET_PREFIX: 'playbooks/',
    LOG_GROUP: '/remote-worker/runs',
    LOG_LEVEL: 'SILENT',
    AWS_LAMBDA_FUNCTION_NAME: 'remote-worker-dispatcher',
    // The `ecs` runner's settings; AWS VMs get their SSH key (rw/ssh-key) by reference.
    ...ecsRunnerEnvironment(names, network, 'rw/ssh-key'),
    // Exactly-once under redelivery, not the launch budget (launch-budget-burst.test.ts): 200 runs outrun its burst.
    LAUNCH_BUDGET_ECS_PER_SECOND: '0',
  };
  // The SDK clients buildAwsDeps creates read the endpoint and credentials from process.env.
  for (const [key, value] of Object.entries(env)) vi.stubEnv(key, value);
}, 60_000);

afterAll(() => {
  vi.unstubAllEnvs();
  sqs?.destroy();
  ecs?.destroy();
  dynamodb?.destroy();
});

describe('exactly once on ECS (moto)', () => {
  it('200 runs, every message delivered twice, a crash after RunTask on most first deliveries: one task per run, all launched', async () => {
    const store = new DynamoRunStore({ client: dynamodb, tableName: names.table });
    const targets = new DynamoTargetStore({ client: dynamodb, tableName: names.table });
    /** Runs whose first launch "crashes" the dispatcher after RunTask returned (three in four). */
    const crashOnFirstLaunch = new Set<string>();
    const crashed = new Set<string>();
    let launches = 0;

    /** The real ECS launcher from buildAwsDeps; the process dies after RunTask, before the status write. */
    const crashing = (real: Launcher): Launcher => ({
      backend: real.backend,
      status: (handle, run) => real.status(handle, run),
      logs: (handle, run, cursor) => real.logs(handle, run, cursor),
      cancel: (handle, run, grace) => real.cancel(handle, run, grace),
      cleanup: (handle, run) => real.cleanup(handle, run),
      async launch(request) {
        launches += 1;
        const handle = await real.launch(request);
        if (crashOnFirstLaunch.has(request.run.id) && !crashed.has(request.run.id)) {
          crashed.add(request.run.id);
          throw new Error('simulated crash');
        }
        return handle;
      },
    });

    /** One Lambda container of the dispatcher: its own composition root, handler and BatchProcessor. */
    const container = (): SqsBatchHandler => {
      const built = buildAwsDeps(env);
      const ecsLauncher = built.launchers.ecs;
      if (ecsLauncher === undefined) throw new Error(`no ecs launcher: ${JSON.stringify(built.unavailable)}`);
      return makeDispatchRuns({
        ...built,
        store,
        launchers: { ...built.launchers, ecs: crashing(ecsLauncher) },
      });
    };
    const containers = Array.from({ length: CONTAINERS }, container);

    // Submit through the application service, as POST /runs does.
    const api = buildAwsDeps(env);
    await targets.putTarget(vmTarget(names.target, { cloud: 'aws', address: '10.1.2.3' }));
    const submitted = await inParallel(
      Array.from({ length: RUNS }, (_, i) => i),
      8,
      async () => {
        const { run } = await submitRun(
          { ...api, store },
          { kind: 'vm', targetId: names.target, asset: 'hello/site.yml', extraVars: {}, secrets: [] },
          CALLER,
        );
        return run;
      },
    );
    expect(submitted.map((r) => [r.state, r.runner])).toEqual(submitted.map(() => ['queued', 'ecs']));
    const ids = submitted.map((r) => r.id);
    ids.forEach((id, i) => {
      if (i % 4 !== 0) crashOnFirstLaunch.add(id);
    });

    // Every message the submits put on the dispatch queue (the loop ends once all are in; the window only bounds a
    // moto slowed down by a loaded machine).
    const messages: Message[] = [];
    const receiveUntil = Date.now() + 60_000;
    while (messages.length < RUNS && Date.now() < receiveUntil) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: dispatchQueueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 0,
          VisibilityTimeout: 600,
          MessageSystemAttributeNames: ['SentTimestamp'],
        }),
      );
      messages.push(...Messages);
    }
    expect(new Set(messages.map((m) => decodeRunMessage(m.Body ?? '')?.runId))).toEqual(new Set(ids));

    // First deliveries, in Lambda-sized batches across the containers.
    let invocation = 0;
    const deliver = async (batches: Message[][], receiveCount: number) =>
      inParallel(batches, CONTAINERS, async (batch, worker) => {
        const handler = containers[worker] as SqsBatchHandler;
        const { batchItemFailures } = await handler(sqsEvent(batch, { receiveCount }), context(++invocation));
        return batchItemFailures.map((f) => f.itemIdentifier);
      });
    const failedFirst = (await deliver(chunks(messages, BATCH), 1)).flat();

    // Each crash is a failed record: SQS would deliver it again.
    const crashedMessages = messages.filter((m) =>
      crashOnFirstLaunch.has(decodeRunMessage(m.Body ?? '')?.runId ?? ''),
    );
    expect(new Set(failedFirst)).toEqual(new Set(crashedMessages.map((m) => m.MessageId)));
    expect(crashed.size).toBe(crashOnFirstLaunch.size);
    for (const id of crashed) {
      const run = await store.getRun(id);
      // The state the crash leaves: claimed, launch intent written, no handle; the task exists.
      expect(run).toMatchObject({ state: 'dispatching', attempt: 1, launch: { backend: 'ecs' } });
      expect(run?.launch?.handle).toBeUndefined();
    }

    // Second deliveries of every message, in another order and other batches, often on another container.
    const reordered = [...messages].sort((a, b) => (a.MessageId ?? '').localeCompare(b.MessageId ?? ''));
    const failedSecond = (await deliver(chunks(reordered, BATCH), 2)).flat();
    expect(failedSecond).toEqual([]);

    // ECS: exactly one task per run, started by that run's attempt 1.
    const taskArns = await allTaskArns();
    const described = (
      await inParallel(chunks(taskArns, 100), 2, async (tasks) => {
        const answer = await ecs.send(new DescribeTasksCommand({ cluster: names.cluster, tasks }));
        return answer.tasks ?? [];
      })
    ).flat();
    expect(described).toHaveLength(taskArns.length);
    const byStartedBy = new Map<string, string[]>();
    for (const task of described) {
      const key = task.startedBy ?? '(none)';
      byStartedBy.set(key, [...(byStartedBy.get(key) ?? []), task.taskArn ?? '']);
    }
    const duplicates = [...byStartedBy].filter(([, arns]) => arns.length > 1);
    expect(duplicates).toEqual([]);
    expect([...byStartedBy.keys()].sort()).toEqual(ids.map((id) => `rw/${id}/1`).sort());
    expect(taskArns).toHaveLength(RUNS);

    // Runs: all launched, attempt 1, each with the handle of the one task its startedBy shows.
    for (const id of ids) {
      const run = await store.getRun(id);
      expect(run).toMatchObject({ state: 'launched', attempt: 1, runner: 'ecs', launch: { backend: 'ecs' } });
      expect(parseEcsHandle(run?.launch?.handle)?.taskArn).toBe(byStartedBy.get(`rw/${id}/1`)?.[0]);
    }
    // ListTasks filtered by startedBy (what the launcher adopts through) agrees, for a crashed run and a clean one.
    for (const id of [ids[0], ids[1]] as string[]) {
      expect(await tasksStartedBy(`rw/${id}/1`)).toEqual(byStartedBy.get(`rw/${id}/1`));
    }

    // Launches: one per first delivery, plus one adoption per crashed run; none for a launched run's duplicate.
    expect(launches).toBe(RUNS + crashed.size);
  }, 120_000);
});
