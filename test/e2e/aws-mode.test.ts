import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ECSClient, ListTasksCommand } from '@aws-sdk/client-ecs';
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startedByFor } from '../../shared/adapters/ecs/handle.ts';
import { encodeRunMessage } from '../../shared/domain/run-message.ts';
import { useMoto } from '../support/moto.ts';
import {
  type Api,
  allLogs,
  client,
  type LocalProcess,
  newDataDir,
  REPO,
  startLocal,
  waitFor,
  waitForState,
} from './harness.ts';

/*
 * `REMOTE_WORKER_MODE=aws REMOTE_WORKER_BOOTSTRAP=1 npm start` against moto,
 * as the README tells a new user to run it: the API over HTTP with the AWS
 * composition, the dispatcher on the SQS dispatch queue, the ECS launcher's
 * RunTask, the ECS task stand-in running the task shim and the real
 * ansible-playbook, the status-sync handler fed its events, and the output read
 * back from CloudWatch Logs.
 *
 * moto differences that matter here (shared/NOTES.md): moto runs no task and
 * keeps no exit code (the stand-in does both); it ignores RunTask's
 * clientToken, so "no second task" below rests on the launcher's ListTasks by
 * startedBy, which is what it is meant to rest on.
 */

const moto = useMoto();
const TARGET = { kind: 'vm', cloud: 'aws', name: 'app-1', address: '127.0.0.1', connection: 'local' };
const CLUSTER = 'remote-worker';

let aws: LocalProcess;
let api: Api;
let ecs: ECSClient;
let sqs: SQSClient;

/** Process ids whose command line contains `needle` (the play's `sleep`), from /proc. */
function processesRunning(needle: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').includes(needle)) {
        found.push(Number(name));
      }
    } catch {
      // ended while we looked
    }
  }
  return found;
}

async function tasksStartedFor(runId: string): Promise<string[]> {
  const arns: string[] = [];
  for (const desiredStatus of ['RUNNING', 'STOPPED'] as const) {
    const { taskArns = [] } = await ecs.send(
      new ListTasksCommand({
        cluster: CLUSTER,
        desiredStatus,
        startedBy: startedByFor({ runId, attempt: 1 }),
      }),
    );
    arns.push(...taskArns);
  }
  return arns;
}

/** The task shim ran the play, not only itself: it fetched its asset through the presigned URL it was handed. */
async function expectThePlayRan(run: { id: string }): Promise<string> {
  const logs = await allLogs(api, run.id);
  expect(logs).toContain('remote-worker: running ansible-playbook');
  return logs;
}

beforeAll(async () => {
  ecs = new ECSClient(moto().clientConfig());
  sqs = new SQSClient(moto().clientConfig());
  aws = await startLocal(newDataDir(), {
    ...moto().env(),
    REMOTE_WORKER_MODE: 'aws',
    REMOTE_WORKER_BOOTSTRAP: '1',
    ANSIBLE_RUNNER_AWS: 'ecs',
    RELAY_EXECUTOR: 'process',
  });
  api = client(aws.url, aws.token);
  expect((await api('PUT', '/targets/app-1', TARGET)).status).toBe(201);
  for (const name of ['site.yml', 'fail.yml', 'slow.yml']) {
    const upload = await api('POST', '/assets', {
      path: `hello/${name}`,
      contentBase64: readFileSync(join(REPO, 'examples/playbooks/hello', name)).toString('base64'),
    });
    expect(upload.status, JSON.stringify(upload.body)).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  await aws?.stop();
  ecs?.destroy();
  sqs?.destroy();
});

describe('AWS mode over HTTP against moto, ECS tasks run by the stand-in', () => {
  it('runs a playbook on ECS to success, its output read back from CloudWatch Logs', async () => {
    const submitted = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'app-1',
      asset: 'hello/site.yml',
      extraVars: { greeting: 'hi from fargate' },
    });
    expect(submitted.status).toBe(202);
    expect(submitted.body).toMatchObject({ state: 'queued', runner: 'ecs' });

    const run = await waitForState(api, submitted.body.id, 'terminal', 60_000);
    const logs = await expectThePlayRan(run);

    expect(run, aws.output()).toMatchObject({ state: 'succeeded', exitCode: 0 });
    expect(run.history.map((h: { state: string }) => h.state)).toEqual([
      'queued',
      'dispatching',
      'launched',
      'running',
      'succeeded',
    ]);
    expect(logs).toContain('hi from fargate from app-1');
    expect(await tasksStartedFor(run.id)).toHaveLength(1);
  }, 90_000);

  it('ends a failing play failed with ansible-playbook exit code and its message in the logs', async () => {
    const submitted = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'app-1',
      asset: 'hello/fail.yml',
      extraVars: { reason: 'disk is full on purpose' },
    });

    const run = await waitForState(api, submitted.body.id, 'terminal', 60_000);
    const logs = await expectThePlayRan(run);

    expect(run, aws.output()).toMatchObject({ state: 'failed', exitCode: 2 });
    expect(logs).toContain('disk is full on purpose');
  }, 90_000);

  it('cancels a running task: StopTask reaches the play, which stops, and the run ends cancelled', async () => {
    const submitted = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'app-1',
      asset: 'hello/slow.yml',
      extraVars: { seconds: 171 },
    });
    await waitFor(
      'the play to start sleeping',
      async () => {
        if (processesRunning('sleep 171').length > 0) return true;
        const { body: run } = await api('GET', `/runs/${submitted.body.id}`);
        if (['succeeded', 'failed', 'cancelled', 'timed_out', 'refused'].includes(run.state)) {
          await expectThePlayRan(run);
          throw new Error(`run ended ${run.state} before its play slept:\n${aws.output()}`);
        }
        return undefined;
      },
      60_000,
    );

    const cancel = await api('POST', `/runs/${submitted.body.id}/cancel`);
    const run = await waitForState(api, submitted.body.id, 'terminal', 30_000);

    expect(cancel.status).toBe(202);
    expect(run, aws.output()).toMatchObject({ state: 'cancelled' });
    await waitFor('the play to be gone', async () =>
      processesRunning('sleep 171').length === 0 ? true : undefined,
    );
  }, 90_000);

  it('makes no second task when the dispatch message is delivered again', async () => {
    const submitted = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'app-1',
      asset: 'hello/slow.yml',
      extraVars: { seconds: 3 },
    });
    const runId = submitted.body.id;
    await waitForState(api, runId, ['running', 'failed'], 60_000);
    const QueueUrl = await dispatchQueueUrl();

    // What SQS's at-least-once delivery does: the same body once more.
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: encodeRunMessage(runId) }));
    await waitFor('the dispatcher to consume the copy', async () => {
      const { Attributes = {} } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return Attributes.ApproximateNumberOfMessages === '0' &&
        Attributes.ApproximateNumberOfMessagesNotVisible === '0'
        ? true
        : undefined;
    });
    const run = await waitForState(api, runId, 'terminal', 60_000);
    await expectThePlayRan(run);

    expect(run, aws.output()).toMatchObject({ state: 'succeeded', exitCode: 0, attempt: 1 });
    expect(await tasksStartedFor(runId)).toHaveLength(1);
  }, 90_000);
});

/** The queue bootstrap made, by the name it gives it. */
async function dispatchQueueUrl(): Promise<string> {
  const match = /dispatch queue: (\S+)/.exec(aws.output());
  if (match?.[1] === undefined)
    throw new Error(`AWS mode did not print its dispatch queue:\n${aws.output()}`);
  return match[1];
}
