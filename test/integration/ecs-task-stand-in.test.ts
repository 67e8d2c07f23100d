import { createHash } from 'node:crypto';
import {
  CloudWatchLogsClient,
  CreateLogGroupCommand,
  GetLogEventsCommand,
} from '@aws-sdk/client-cloudwatch-logs';
import {
  CreateClusterCommand,
  DescribeTasksCommand,
  ECSClient,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
  StopTaskCommand,
} from '@aws-sdk/client-ecs';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EcsTaskStateChangeEvent } from '../../functions/status-sync/ecs-task-state-change.ts';
import { EcsTaskStandIn } from '../../tools/ecs-task-stand-in/stand-in.ts';
import { useMoto } from '../support/moto.ts';
import { defaultNetwork } from './ecs-moto.ts';

/*
 * The ECS task stand-in against moto, with `sh` as the image's entrypoint so
 * each test states exactly what its container does. (The task shim as the
 * entrypoint, with a real playbook, is test/e2e/aws-mode.test.ts.)
 *
 * moto differences that matter here: the awsvpc configuration must name a
 * security group (moto answers an HTML 500 without one); moto runs nothing and records no exit
 * code — that is what the stand-in is for; the outcome is read from the
 * stand-in and from the events, DescribeTasks only says STOPPED.
 */

const moto = useMoto();
const CLUSTER = 'stand-in';
const GROUP = '/remote-worker/runs';
const SECRET_VALUE = 'canary-Secret-Value-7f3a';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

let ecs: ECSClient;
let logs: CloudWatchLogsClient;
let secretsManager: SecretsManagerClient;
let standIn: EcsTaskStandIn;
let events: EcsTaskStateChangeEvent[];
let subnet = '';
let securityGroup = '';
let secretArn = '';
let jsonSecretArn = '';

beforeAll(() => {
  ecs = new ECSClient(moto().clientConfig());
  logs = new CloudWatchLogsClient(moto().clientConfig());
  secretsManager = new SecretsManagerClient(moto().clientConfig());
});
afterAll(() => {
  ecs?.destroy();
  logs?.destroy();
  secretsManager?.destroy();
});

beforeEach(async () => {
  await moto().reset();
  await ecs.send(new CreateClusterCommand({ clusterName: CLUSTER }));
  await logs.send(new CreateLogGroupCommand({ logGroupName: GROUP }));
  secretArn =
    (await secretsManager.send(new CreateSecretCommand({ Name: 'rw/plain', SecretString: SECRET_VALUE })))
      .ARN ?? '';
  jsonSecretArn =
    (
      await secretsManager.send(
        new CreateSecretCommand({ Name: 'rw/json', SecretString: JSON.stringify({ password: 'k-value' }) }),
      )
    ).ARN ?? '';
  ({ subnet, securityGroup } = await defaultNetwork(moto().endpoint));
  events = [];
  standIn = new EcsTaskStandIn({
    ecs,
    secretsManager,
    logs,
    cluster: CLUSTER,
    region: 'us-east-1',
    motoEndpoint: moto().endpoint,
    entrypoint: () => ['/bin/sh', '-c'],
    maxStopTimeoutSeconds: 5,
    pollMs: 50,
    deliver: async (event) => {
      events.push(event);
    },
  });
  await standIn.start();
  return () => standIn.stop();
});

async function runTask(options: {
  command: string;
  secrets?: { name: string; valueFrom: string }[];
  stopTimeout?: number;
}): Promise<string> {
  const { taskDefinition } = await ecs.send(
    new RegisterTaskDefinitionCommand({
      family: 'stand-in-test',
      requiresCompatibilities: ['FARGATE'],
      networkMode: 'awsvpc',
      cpu: '256',
      memory: '512',
      containerDefinitions: [
        {
          name: 'runner',
          image: 'example/runner:1',
          memory: 512,
          essential: true,
          environment: [
            { name: 'PLAIN', value: 'from-definition' },
            { name: 'OVER', value: 'from-definition' },
          ],
          ...(options.secrets === undefined ? {} : { secrets: options.secrets }),
          ...(options.stopTimeout === undefined ? {} : { stopTimeout: options.stopTimeout }),
          logConfiguration: {
            logDriver: 'awslogs',
            options: {
              'awslogs-group': GROUP,
              'awslogs-region': 'us-east-1',
              'awslogs-stream-prefix': 'run',
            },
          },
        },
      ],
    }),
  );
  const { tasks } = await ecs.send(
    new RunTaskCommand({
      cluster: CLUSTER,
      taskDefinition: taskDefinition?.taskDefinitionArn,
      launchType: 'FARGATE',
      group: 'rw:run-1:1',
      startedBy: 'rw:run-1:1',
      networkConfiguration: { awsvpcConfiguration: { subnets: [subnet], securityGroups: [securityGroup] } },
      overrides: {
        containerOverrides: [
          {
            name: 'runner',
            command: [options.command],
            environment: [{ name: 'OVER', value: 'from-override' }],
          },
        ],
      },
    }),
  );
  const arn = tasks?.[0]?.taskArn;
  if (arn === undefined) throw new Error('RunTask made no task');
  return arn;
}

async function streamText(taskArn: string): Promise<string> {
  const { events: lines = [] } = await logs.send(
    new GetLogEventsCommand({
      logGroupName: GROUP,
      logStreamName: `run/runner/${taskArn.split('/').at(-1)}`,
      startFromHead: true,
    }),
  );
  return lines.map((l) => l.message).join('\n');
}

const statuses = (arn: string) =>
  events
    .filter((e) => (e.detail as { taskArn: string }).taskArn === arn)
    .map((e) => {
      const d = e.detail as { lastStatus: string; version: number };
      return `${d.lastStatus}@${d.version}`;
    });

describe('EcsTaskStandIn', () => {
  it('runs the container with its environment, overrides and secrets; ships output; records the exit code', async () => {
    const arn = await runTask({
      command:
        'echo "plain=$PLAIN over=$OVER exec=$AWS_EXECUTION_ENV"; ' +
        // Compared by digest, so the value itself is in no override (which the events carry).
        `[ "$(printf %s "$SECRET" | sha256sum | cut -c1-64)" = ${sha256(SECRET_VALUE)} ] && echo secret-arrived; ` +
        '[ "$KEYED" = k-value ] && echo json-key-arrived; ' +
        '[ -z "$AWS_SECRET_ACCESS_KEY" ] && echo no-host-credentials; exit 3',
      secrets: [
        { name: 'SECRET', valueFrom: secretArn },
        { name: 'KEYED', valueFrom: `${jsonSecretArn}:password::` },
      ],
    });

    const outcome = await standIn.settled(arn);

    expect(outcome).toEqual({
      stopCode: 'EssentialContainerExited',
      stoppedReason: 'Essential container in task exited',
      exitCode: 3,
    });
    expect(await streamText(arn)).toBe(
      'plain=from-definition over=from-override exec=AWS_ECS_FARGATE\nsecret-arrived\njson-key-arrived\nno-host-credentials',
    );
    expect(statuses(arn)).toEqual(['PROVISIONING@1', 'RUNNING@2', 'STOPPED@3']);
    const stopped = events.at(-1);
    expect(stopped).toMatchObject({
      source: 'aws.ecs',
      'detail-type': 'ECS Task State Change',
      resources: [arn],
      detail: {
        group: 'rw:run-1:1',
        startedBy: 'rw:run-1:1',
        stopCode: 'EssentialContainerExited',
        containers: [{ name: 'runner', exitCode: 3 }],
      },
    });
    expect(JSON.stringify(events)).not.toContain(SECRET_VALUE);
    const { tasks } = await ecs.send(new DescribeTasksCommand({ cluster: CLUSTER, tasks: [arn] }));
    expect(tasks?.[0]?.lastStatus).toBe('STOPPED');
  });

  it('turns StopTask into SIGTERM and reports the stop as user-initiated with the reason given', async () => {
    const arn = await runTask({ command: 'echo started; exec sleep 30' });
    await expect.poll(() => streamText(arn), { timeout: 10_000 }).toBe('started');

    await ecs.send(new StopTaskCommand({ cluster: CLUSTER, task: arn, reason: 'run was cancelled' }));
    const outcome = await standIn.settled(arn);

    expect(outcome).toEqual({ stopCode: 'UserInitiated', stoppedReason: 'run was cancelled', exitCode: 143 });
    expect(statuses(arn)).toEqual(['PROVISIONING@1', 'RUNNING@2', 'STOPPED@3']);
  });

  it('kills a container that ignores SIGTERM once its stopTimeout has passed', async () => {
    const arn = await runTask({
      command: "trap '' TERM; echo started; while :; do sleep 0.1; done",
      stopTimeout: 1,
    });
    await expect.poll(() => streamText(arn), { timeout: 10_000 }).toBe('started');
    const asked = Date.now();

    await ecs.send(new StopTaskCommand({ cluster: CLUSTER, task: arn, reason: 'timed out' }));
    const outcome = await standIn.settled(arn);

    expect(outcome.exitCode).toBe(137);
    expect(Date.now() - asked).toBeGreaterThanOrEqual(900);
  });

  it('fails the task before start when a secret cannot be fetched, naming the reference and no value', async () => {
    const missing = secretArn.replace('rw/plain', 'rw/missing');
    const arn = await runTask({
      command: 'echo should-not-run',
      secrets: [
        { name: 'SECRET', valueFrom: secretArn },
        { name: 'GONE', valueFrom: missing },
      ],
    });

    const outcome = await standIn.settled(arn);

    expect(outcome.stopCode).toBe('TaskFailedToStart');
    expect(outcome.exitCode).toBeUndefined();
    expect(outcome.stoppedReason).toMatch(/^ResourceInitializationError: unable to pull secrets/);
    expect(outcome.stoppedReason).toContain('rw/missing');
    expect(statuses(arn)).toEqual(['PROVISIONING@1', 'STOPPED@2']);
    expect(JSON.stringify(events)).not.toContain(SECRET_VALUE);
  });
});
