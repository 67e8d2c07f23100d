import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DynamoLogStore } from '../../shared/adapters/dynamodb/log-store.ts';
import { DynamoRunStore } from '../../shared/adapters/dynamodb/run-store.ts';
import { DynamoTargetStore } from '../../shared/adapters/dynamodb/target-store.ts';
import type { Run } from '../../shared/domain/run.ts';
import { encodeRunMessage } from '../../shared/domain/run-message.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { createRunTable, useMoto } from '../support/moto.ts';
import { createQueuedRun, markLaunched, vmTarget } from '../unit/app/harness.ts';

/**
 * runners/relay/main.ts as the separate process an on-prem host runs, against
 * moto (DynamoDB runs table and logs, SQS relay queue), with the real process
 * executor, the task shim and ansible-playbook on this host.
 */
const repo = resolve(import.meta.dirname, '../..');
const moto = useMoto();

describe('relay agent (standalone process)', () => {
  const TABLE = 'runs';
  let ddb: DynamoDBClient;
  let sqs: SQSClient;
  let store: DynamoRunStore;
  let targets: DynamoTargetStore;
  let queueUrl: string;
  let workDir: string;
  let relay: ChildProcess;
  let output = '';
  let exited: Promise<number | null>;

  /** A run as the dispatcher leaves it for the relay: launched on the `local` runner, message on the relay queue. */
  const submit = async (id: string, asset: string, extraVars: Record<string, unknown> = {}): Promise<Run> => {
    const run = await createQueuedRun(store, systemClock, { id, targetId: 'this-host', asset, extraVars });
    const launched = await markLaunched(store, systemClock, run, { backend: 'local', handle: 'relay:relay' });
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: encodeRunMessage(id) }));
    return launched;
  };

  const stateOf = async (id: string) => (await store.getRun(id))?.state;

  beforeAll(async () => {
    ddb = new DynamoDBClient(moto().clientConfig());
    sqs = new SQSClient(moto().clientConfig());
    store = new DynamoRunStore({ tableName: TABLE, client: ddb });
    targets = new DynamoTargetStore({ tableName: TABLE, client: ddb });
    await createRunTable(ddb, TABLE);
    ({ QueueUrl: queueUrl = '' } = await sqs.send(
      new CreateQueueCommand({ QueueName: 'relay', Attributes: { VisibilityTimeout: '60' } }),
    ));
    await targets.putTarget(
      vmTarget('this-host', { cloud: 'local', address: '127.0.0.1', connection: 'local' }),
    );
    workDir = mkdtempSync(join(tmpdir(), 'rw-relay-main-'));

    relay = spawn(process.execPath, ['--import', 'tsx', join(repo, 'runners/relay/main.ts')], {
      cwd: repo,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...moto().env(),
        RELAY_ID: 'relay-test',
        RELAY_QUEUE_URL: queueUrl,
        RUNS_TABLE: TABLE,
        RELAY_ASSET_ROOT: 'examples/playbooks',
        RELAY_EXECUTOR: 'process',
        RELAY_WORK_DIR: workDir,
        RELAY_POLL_WAIT_SECONDS: '1',
        RELAY_DRAIN_SECONDS: '60',
        RELAY_CONCURRENCY: '2',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    relay.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    relay.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    exited = new Promise((resolve) => relay.once('exit', (code) => resolve(code)));
    await vi.waitFor(() => expect(output).toContain('relay started'), { timeout: 30_000, interval: 100 });
  }, 60_000);

  afterAll(async () => {
    if (relay !== undefined && relay.exitCode === null && relay.signalCode === null) {
      relay.kill('SIGKILL');
      await exited;
    }
    ddb?.destroy();
    sqs?.destroy();
    if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
  });

  it('takes a run from its queue, runs the playbook with ansible-playbook, ships the output and settles it succeeded', async () => {
    await submit('run-hello', 'hello/site.yml', { greeting: 'hi from the relay' });

    await vi.waitFor(async () => expect(await stateOf('run-hello')).toBe('succeeded'), {
      timeout: 45_000,
      interval: 250,
    });

    const run = await store.getRun('run-hello');
    expect(run).toMatchObject({ state: 'succeeded', exitCode: 0, owner: 'relay:relay-test' });
    expect(run?.history.map((h) => h.state)).toEqual([
      'queued',
      'dispatching',
      'launched',
      'running',
      'succeeded',
    ]);
    const logs = await new DynamoLogStore({ tableName: TABLE, client: ddb }).read('run-hello');
    expect(logs.lines.map((l) => l.text).join('\n')).toContain('"msg": "hi from the relay from this-host"');
    // The message is gone once the run settled.
    await vi.waitFor(
      async () => {
        const { Attributes } = await sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: queueUrl,
            AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
          }),
        );
        expect(
          Number(Attributes?.ApproximateNumberOfMessages) +
            Number(Attributes?.ApproximateNumberOfMessagesNotVisible),
        ).toBe(0);
      },
      { timeout: 10_000, interval: 250 },
    );
  }, 60_000);

  it('on SIGTERM stops taking work, lets the running run finish, and exits 0', async () => {
    await submit('run-slow', 'hello/slow.yml', { seconds: 4 });
    await vi.waitFor(async () => expect(await stateOf('run-slow')).toBe('running'), {
      timeout: 45_000,
      interval: 100,
    });

    relay.kill('SIGTERM');
    await vi.waitFor(() => expect(output).toContain('relay draining'), { timeout: 10_000, interval: 50 });
    // A long poll already waiting when the signal came may still return; it lasts at most 1 s here.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await submit('run-after-stop', 'hello/site.yml');

    expect(await exited).toBe(0);
    expect(await stateOf('run-slow')).toBe('succeeded');
    // Sent after the drain began: left for the next relay, not started here.
    expect(await store.getRun('run-after-stop')).toMatchObject({
      state: 'launched',
      owner: 'dispatcher:m-1',
    });
    expect(output).toContain('relay stopped');
  }, 60_000);
});
