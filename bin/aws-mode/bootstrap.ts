import {
  CloudWatchLogsClient,
  CreateLogGroupCommand,
  ResourceAlreadyExistsException,
} from '@aws-sdk/client-cloudwatch-logs';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceNotFoundException,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import {
  CreateClusterCommand,
  DescribeTaskDefinitionCommand,
  ECSClient,
  RegisterTaskDefinitionCommand,
} from '@aws-sdk/client-ecs';
import {
  BucketAlreadyOwnedByYou,
  type BucketLocationConstraint,
  CreateBucketCommand,
  HeadBucketCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Settings } from '../../shared/config/settings.ts';
import { runTableDefinition } from '../../shared/domain/run-table.ts';
import { ensureRunnerNetwork } from './ec2-network.ts';

/*
 * Names and limits mirror the CDK stack (infra/), so AWS mode against a fresh
 * account or an emulator behaves like a deployment: the runner container
 * `runner` logging with awslogs under the `run` prefix, queue visibility six
 * times the consuming function's timeout (dispatcher 60 s, dead letters 30 s),
 * the relay queue's 2 minutes.
 */
const CONTAINER = 'runner';
const LOG_STREAM_PREFIX = 'run';
const VISIBILITY = { dispatch: 360, deadLetter: 180, relay: 120 } as const;
/** The relay keeps a message while its run executes; only a run that keeps bouncing dead-letters (local mode's value). */
const RELAY_MAX_RECEIVES = 100;
const RUNNER_IMAGES = ['ansible_local_image', 'ansible_cloud_image', 'k8s_runner_image'] as const;

type Env = Readonly<Record<string, string | undefined>>;

/** What bootstrap found or made, as the environment the AWS composition reads. */
export type BootstrapEnv = Record<string, string>;

const isEmulator = (env: Env): boolean => (env.AWS_ENDPOINT_URL ?? '') !== '';

async function ensureTable(client: DynamoDBClient, name: string): Promise<void> {
  try {
    await client.send(new DescribeTableCommand({ TableName: name }));
    return;
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
  await createRunTable(client, name);
}

/** Create the runs table exactly as the adapter defines it (keys, indexes, TTL); the tests' moto tables too. */
export async function createRunTable(client: DynamoDBClient, name: string): Promise<void> {
  const def = runTableDefinition();
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: def.keySchema,
      AttributeDefinitions: def.attributeDefinitions,
      GlobalSecondaryIndexes: def.globalSecondaryIndexes,
    }),
  );
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: name,
      TimeToLiveSpecification: { AttributeName: def.timeToLiveAttribute, Enabled: true },
    }),
  );
}

/** A queue and its DLQ. CreateQueue answers the existing URL when the attributes match. */
async function ensureQueuePair(
  client: SQSClient,
  name: string,
  visibility: number,
  maxReceiveCount: number,
): Promise<string> {
  const dlq = await client.send(
    new CreateQueueCommand({
      QueueName: `${name}-dlq`,
      Attributes: { VisibilityTimeout: String(VISIBILITY.deadLetter), MessageRetentionPeriod: '1209600' },
    }),
  );
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  const queue = await client.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(visibility),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes?.QueueArn, maxReceiveCount }),
      },
    }),
  );
  if (queue.QueueUrl === undefined) throw new Error(`SQS CreateQueue ${name} answered no URL`);
  return queue.QueueUrl;
}

async function ensureBucket(client: S3Client, name: string, region: string): Promise<void> {
  try {
    await client.send(new HeadBucketCommand({ Bucket: name }));
    return;
  } catch {
    // Not there (or not ours): try to create it, which says which.
  }
  try {
    await client.send(
      new CreateBucketCommand({
        Bucket: name,
        ...(region === 'us-east-1'
          ? {}
          : { CreateBucketConfiguration: { LocationConstraint: region as BucketLocationConstraint } }),
      }),
    );
  } catch (error) {
    if (!(error instanceof BucketAlreadyOwnedByYou)) throw error;
  }
}

async function ensureLogGroup(client: CloudWatchLogsClient, name: string): Promise<void> {
  try {
    await client.send(new CreateLogGroupCommand({ logGroupName: name }));
  } catch (error) {
    if (!(error instanceof ResourceAlreadyExistsException)) throw error;
  }
}

/** A Fargate task definition per runner image, as infra/constructs/runners.ts makes them; an existing family is kept. */
async function ensureTaskDefinitions(
  client: ECSClient,
  options: {
    prefix: string;
    images: Record<string, string>;
    executionRoleArn: string;
    logGroup: string;
    region: string;
  },
): Promise<Record<string, string>> {
  const byImage: Record<string, string> = {};
  for (const [setting, image] of Object.entries(options.images)) {
    const family = `${options.prefix}-${setting.replace(/_image$/, '').replaceAll('_', '-')}`;
    byImage[image] = family;
    const exists = await client
      .send(new DescribeTaskDefinitionCommand({ taskDefinition: family }))
      .then(() => true)
      .catch(() => false);
    if (exists) continue;
    await client.send(
      new RegisterTaskDefinitionCommand({
        family,
        requiresCompatibilities: ['FARGATE'],
        networkMode: 'awsvpc',
        cpu: '1024',
        memory: '2048',
        executionRoleArn: options.executionRoleArn,
        containerDefinitions: [
          {
            name: CONTAINER,
            image,
            essential: true,
            // moto needs memory on the container itself (shared/NOTES.md); ECS accepts it there too.
            memory: 2048,
            stopTimeout: 120,
            logConfiguration: {
              logDriver: 'awslogs',
              options: {
                'awslogs-group': options.logGroup,
                'awslogs-region': options.region,
                'awslogs-stream-prefix': LOG_STREAM_PREFIX,
              },
            },
          },
        ],
      }),
    );
  }
  return byImage;
}

/**
 * `REMOTE_WORKER_BOOTSTRAP=1`: create what AWS mode needs and is missing —
 * the runs table, the dispatch and relay queues with their DLQs, the asset
 * bucket, the run log group, the ECS cluster and a task definition per runner
 * image — and answer the environment naming them. A variable already set is
 * used as it is (the table, bucket or log group it names is still created
 * when missing; a queue URL is taken as given); nothing that exists is changed.
 *
 * Against an emulator (AWS_ENDPOINT_URL set) it also makes a runner subnet and
 * security group and, with no `ansible_ecs_execution_role_arn`, names an
 * execution role in the account (emulators do not check it). On AWS the role
 * must be given: without it the ECS settings are left unset and ECS runs are
 * refused with the reason.
 *
 * @example
 * Object.assign(env, await bootstrapAws(env, settings));
 */
export async function bootstrapAws(env: Env, settings: Settings): Promise<BootstrapEnv> {
  const prefix = env.REMOTE_WORKER_NAME || 'remote-worker';
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1';
  const out: BootstrapEnv = {};
  const dynamodb = new DynamoDBClient({});
  const sqs = new SQSClient({});
  const s3 = new S3Client({ forcePathStyle: isEmulator(env) });
  const logs = new CloudWatchLogsClient({});
  const ecs = new ECSClient({});
  try {
    out.RUNS_TABLE = env.RUNS_TABLE || `${prefix}-runs`;
    await ensureTable(dynamodb, out.RUNS_TABLE);

    out.DISPATCH_QUEUE_URL =
      env.DISPATCH_QUEUE_URL ||
      (await ensureQueuePair(
        sqs,
        `${prefix}-dispatch`,
        VISIBILITY.dispatch,
        settings.dispatch_max_receive_count,
      ));
    out.RELAY_QUEUE_URL =
      env.RELAY_QUEUE_URL ||
      (await ensureQueuePair(sqs, `${prefix}-relay`, VISIBILITY.relay, RELAY_MAX_RECEIVES));
    // The account is in every queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>).
    const account = new URL(out.DISPATCH_QUEUE_URL).pathname.split('/')[1] ?? '';

    out.ASSET_BUCKET = env.ASSET_BUCKET || `${prefix}-assets-${account}-${region}`;
    await ensureBucket(s3, out.ASSET_BUCKET, region);
    out.LOG_GROUP = env.LOG_GROUP || `/${prefix}/runs`;
    await ensureLogGroup(logs, out.LOG_GROUP);

    out.ANSIBLE_ECS_CLUSTER = settings.ansible_ecs_cluster ?? prefix;
    await ecs.send(new CreateClusterCommand({ clusterName: out.ANSIBLE_ECS_CLUSTER }));

    if (settings.ansible_ecs_subnet_id === undefined && isEmulator(env)) {
      const network = await ensureRunnerNetwork(env.AWS_ENDPOINT_URL ?? '', region);
      out.ANSIBLE_ECS_SUBNET_ID = network.subnetId;
      out.ANSIBLE_ECS_SECURITY_GROUP_IDS = network.securityGroupId;
    }
    const executionRoleArn =
      settings.ansible_ecs_execution_role_arn ??
      (isEmulator(env) ? `arn:aws:iam::${account}:role/${prefix}-task-execution` : undefined);
    if (executionRoleArn !== undefined) {
      out.ANSIBLE_ECS_EXECUTION_ROLE_ARN = executionRoleArn;
      if (env.ECS_TASK_DEFINITIONS === undefined || env.ECS_TASK_DEFINITIONS === '') {
        const images = Object.fromEntries(RUNNER_IMAGES.map((key) => [key, settings[key]]));
        out.ECS_TASK_DEFINITIONS = JSON.stringify(
          await ensureTaskDefinitions(ecs, {
            prefix,
            images,
            executionRoleArn,
            logGroup: out.LOG_GROUP,
            region,
          }),
        );
      }
    }
    return out;
  } finally {
    for (const client of [dynamodb, sqs, s3, logs, ecs]) client.destroy();
  }
}
