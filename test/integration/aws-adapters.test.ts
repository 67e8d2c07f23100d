import { randomUUID } from 'node:crypto';
import {
  CloudWatchLogsClient,
  CreateLogGroupCommand,
  CreateLogStreamCommand,
  PutLogEventsCommand,
} from '@aws-sdk/client-cloudwatch-logs';
import { DynamoDBClient, TransactionCanceledException, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import {
  CreateSecretCommand,
  PutSecretValueCommand,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { CreateQueueCommand, type SendMessageBatchCommandOutput, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CloudWatchLogReader } from '../../shared/adapters/cloudwatch-logs/log-reader.ts';
import { awslogsStreamName } from '../../shared/adapters/cloudwatch-logs/stream-name.ts';
import { runKey } from '../../shared/adapters/dynamodb/items.ts';
import { DynamoRunStore } from '../../shared/adapters/dynamodb/run-store.ts';
import { S3AssetStore } from '../../shared/adapters/s3/asset-store.ts';
import { SecretsManagerSecretSource } from '../../shared/adapters/secrets-manager/secret-source.ts';
import { SqsWorkQueue } from '../../shared/adapters/sqs/work-queue.ts';
import {
  AssetExistsError,
  AssetNotFoundError,
  AssetOutsideRootError,
  IdempotencyMismatchError,
  NotFoundError,
  RunConflictError,
  ValidationError,
} from '../../shared/domain/errors.ts';
import { newRun, type Run, transition } from '../../shared/domain/run.ts';
import { newId } from '../../shared/lib/ids.ts';
import type { Clock } from '../../shared/ports/clock.ts';
import type { LogLine } from '../../shared/ports/log-store.ts';
import type { QueueMessage } from '../../shared/ports/work-queue.ts';
import { createRunTable, oneRequestAtATime, useMoto } from '../support/moto.ts';

/*
 * Focused tests of the AWS adapters against moto 5.2.1. Where moto differs
 * from AWS (and what these tests therefore do not prove):
 * - SQS: ChangeMessageVisibility on a message that is visible again succeeds
 *   in moto; AWS answers MessageNotInflight, which SqsWorkQueue treats as a
 *   no-op — exercised below with that error injected, not from moto.
 *   Message bodies with characters SQS forbids (e.g. NUL) are accepted.
 * - CloudWatch Logs: a missing stream is reported as "The specified log group
 *   does not exist" (AWS says "log stream"); both are ResourceNotFoundException,
 *   which is all the reader looks at. GetLogEvents never answers the empty
 *   pages with a moving token that AWS may return mid-stream.
 * - DynamoDB: moto is not thread-safe under concurrent transactions (HTML
 *   500s; see `oneRequestAtATime`) and never reports TransactionConflict: the
 *   retry on it is exercised with the error injected. TTL never expires
 *   items: the expired-key test relies on the store's own expiry check.
 * - S3: HEAD on a missing bucket and on a missing key both answer 404 NotFound
 *   (as AWS does), so a wrong bucket name reads as "asset not found".
 */

const moto = useMoto();

class ManualClock implements Clock {
  constructor(private ms = Date.now()) {}
  now(): string {
    return new Date(this.ms).toISOString();
  }
  nowMs(): number {
    return this.ms;
  }
  advance(seconds: number): void {
    this.ms += seconds * 1000;
  }
}

/** Count the requests a client sends (initialize step: once per command, before retries). */
function countRequests(client: { middlewareStack: { add: (...args: any[]) => void } }): () => number {
  let count = 0;
  client.middlewareStack.add(
    (next: (args: unknown) => Promise<unknown>) => (args: unknown) => {
      count += 1;
      return next(args);
    },
    { step: 'initialize' },
  );
  return () => count;
}

const unique = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

describe('SecretsManagerSecretSource', () => {
  let client: SecretsManagerClient;
  beforeAll(() => {
    client = new SecretsManagerClient(moto().clientConfig());
  });
  afterAll(() => client.destroy());

  const createSecret = async (value: string | Uint8Array): Promise<string> => {
    const name = unique('rw/secret');
    await client.send(
      new CreateSecretCommand(
        typeof value === 'string' ? { Name: name, SecretString: value } : { Name: name, SecretBinary: value },
      ),
    );
    return name;
  };

  it('reads the current value of a secret by name', async () => {
    const name = await createSecret('s3cr3t-value');
    const secrets = new SecretsManagerSecretSource({ client });

    expect(await secrets.get(name)).toBe('s3cr3t-value');
  });

  it('answers NotFoundError naming a missing secret, with no value anywhere in the error', async () => {
    await createSecret('other-value-do-not-leak');
    const secrets = new SecretsManagerSecretSource({ client });

    const error = await secrets.get('rw/missing').catch((e: unknown) => e);

    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as Error).message).toContain('"rw/missing"');
    expect((error as Error).cause).toMatchObject({ name: 'ResourceNotFoundException' });
    expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain('do-not-leak');
  });

  it('serves a cached value within the TTL and fetches again after it', async () => {
    const name = await createSecret('v1');
    const clock = new ManualClock();
    const secrets = new SecretsManagerSecretSource({ client, clock, ttlSeconds: 60 });
    expect(await secrets.get(name)).toBe('v1');

    await client.send(new PutSecretValueCommand({ SecretId: name, SecretString: 'v2' }));
    const cached = await secrets.get(name);
    clock.advance(61);
    const fresh = await secrets.get(name);

    expect([cached, fresh]).toEqual(['v1', 'v2']);
  });

  it('shares one request between concurrent reads of a name', async () => {
    const name = await createSecret('shared');
    const counted = new SecretsManagerClient(moto().clientConfig());
    const requests = countRequests(counted);
    const secrets = new SecretsManagerSecretSource({ client: counted });

    const values = await Promise.all(Array.from({ length: 5 }, () => secrets.get(name)));

    expect(values).toEqual(Array(5).fill('shared'));
    expect(requests()).toBe(1);
    counted.destroy();
  });

  it('does not cache a failure', async () => {
    const name = unique('rw/later');
    const secrets = new SecretsManagerSecretSource({ client, ttlSeconds: 300 });
    await expect(secrets.get(name)).rejects.toBeInstanceOf(NotFoundError);

    await client.send(new CreateSecretCommand({ Name: name, SecretString: 'now here' }));

    expect(await secrets.get(name)).toBe('now here');
  });

  it('decodes a binary secret that is UTF-8 text and refuses one that is not, without quoting it', async () => {
    const text = await createSecret(new TextEncoder().encode('ssh-ed25519 AAAA…'));
    const binary = await createSecret(new Uint8Array([0xff, 0xfe, 0x41]));
    const secrets = new SecretsManagerSecretSource({ client });

    expect(await secrets.get(text)).toBe('ssh-ed25519 AAAA…');
    await expect(secrets.get(binary)).rejects.toThrow(`Secret "${binary}" holds binary data`);
  });
});

describe('S3AssetStore', () => {
  const bucket = unique('rw-assets');
  let client: S3Client;
  const seed: Record<string, string> = {
    'playbooks/hello/site.yml': '- hosts: all\n',
    'playbooks/tools/setup.sh': 'echo hi\n',
    'playbooks/win/setup.ps1': 'Write-Host hi\n',
    'playbooks/pkgs/agent.rpm': 'rpm',
    'playbooks/pkgs/agent.deb': 'deb',
    'playbooks/README': 'docs',
    'playbooks/.git/config': '[core]',
    'playbooks/hello/.env': 'TOKEN=x',
    'playbooks/empty-folder/': '',
    'elsewhere/outside.yml': '- hosts: all\n',
  };

  beforeAll(async () => {
    client = new S3Client(moto().s3ClientConfig());
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    for (const [key, body] of Object.entries(seed)) {
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: body,
          ContentLength: Buffer.byteLength(body),
        }),
      );
    }
  });
  afterAll(() => client.destroy());

  const store = (options: { prefix?: string; pageSize?: number } = {}) =>
    new S3AssetStore({ client, bucket, prefix: 'playbooks', ...options });

  it('locates an object under the prefix as an s3 URL', async () => {
    expect(await store().locate('hello/site.yml')).toEqual({
      kind: 'url',
      url: `s3://${bucket}/playbooks/hello/site.yml`,
    });
  });

  it('answers AssetNotFoundError for a missing key and for hidden ones', async () => {
    for (const path of [
      'hello/missing.yml',
      '.git/config',
      'hello/.env',
      'hello//site.yml',
      './hello/site.yml',
    ]) {
      await expect(store().locate(path), path).rejects.toBeInstanceOf(AssetNotFoundError);
    }
  });

  it('refuses absolute paths and .. segments with AssetOutsideRootError, before asking S3', async () => {
    const counted = new S3Client(moto().s3ClientConfig());
    const requests = countRequests(counted);
    const assets = new S3AssetStore({ client: counted, bucket, prefix: 'playbooks/' });

    for (const path of [
      '/playbooks/hello/site.yml',
      '../elsewhere/outside.yml',
      'hello/../../elsewhere/outside.yml',
      '..\\elsewhere\\outside.yml',
      'C:\\site.yml',
      '\\\\host\\share\\site.yml',
    ]) {
      await expect(assets.locate(path), path).rejects.toBeInstanceOf(AssetOutsideRootError);
    }
    expect(requests()).toBe(0);
    counted.destroy();
  });

  it('lists every servable object under the prefix across pages, sorted, with type badges', async () => {
    const listed = await store({ pageSize: 2 }).list();

    expect(listed).toEqual([
      { path: 'README', size: 4, type: 'other' },
      { path: 'hello/site.yml', size: 13, type: 'playbook' },
      { path: 'pkgs/agent.deb', size: 3, type: 'deb' },
      { path: 'pkgs/agent.rpm', size: 3, type: 'rpm' },
      { path: 'tools/setup.sh', size: 8, type: 'script' },
      { path: 'win/setup.ps1', size: 14, type: 'powershell' },
    ]);
  });

  it('lists nothing for an empty prefix', async () => {
    expect(await store({ prefix: 'nothing-here/' }).list()).toEqual([]);
  });

  it('puts a new asset, refuses to replace it, and replaces it with overwrite', async () => {
    const assets = store({ prefix: unique('uploads') });
    const bytes = new TextEncoder().encode('echo one\n');

    const first = await assets.put('tools/one.sh', bytes);
    const clobber = assets.put('tools/one.sh', new TextEncoder().encode('echo two\n'));
    await expect(clobber).rejects.toBeInstanceOf(AssetExistsError);
    const replaced = await assets.put('tools/one.sh', new TextEncoder().encode('echo three\n'), {
      overwrite: true,
    });

    expect(first).toEqual({ asset: { path: 'tools/one.sh', size: 9, type: 'script' }, replaced: false });
    expect(replaced).toEqual({ asset: { path: 'tools/one.sh', size: 11, type: 'script' }, replaced: true });
    expect(await assets.list()).toEqual([{ path: 'tools/one.sh', size: 11, type: 'script' }]);
  });

  it('refuses to put outside the root or under a bad path', async () => {
    const assets = store({ prefix: unique('uploads') });
    const bytes = new Uint8Array([1]);

    await expect(assets.put('../escape.sh', bytes)).rejects.toBeInstanceOf(AssetOutsideRootError);
    await expect(assets.put('/abs.sh', bytes)).rejects.toBeInstanceOf(AssetOutsideRootError);
    await expect(assets.put('.hidden/x.sh', bytes)).rejects.toBeInstanceOf(ValidationError);
    await expect(assets.put('no-extension', bytes)).rejects.toBeInstanceOf(ValidationError);
    expect(await assets.list()).toEqual([]);
  });
});

describe('CloudWatchLogReader', () => {
  const logGroup = unique('/remote-worker/runs');
  let client: CloudWatchLogsClient;
  /** runId → stream, as the ECS launcher would answer from the run's task ARN. */
  const streams = new Map<string, string>();

  beforeAll(async () => {
    client = new CloudWatchLogsClient(moto().clientConfig());
    await client.send(new CreateLogGroupCommand({ logGroupName: logGroup }));
  });
  afterAll(() => client.destroy());

  const reader = () =>
    new CloudWatchLogReader({ client, logGroup, streamFor: (runId) => streams.get(runId) });

  /** A run whose task writes to its own awslogs stream; returns the run id and a writer. */
  async function runWithStream(
    create = true,
  ): Promise<{ runId: string; stream: string; write(texts: string[]): Promise<number[]> }> {
    const runId = newId();
    const stream = awslogsStreamName(
      'run',
      'runner',
      `arn:aws:ecs:us-east-1:123456789012:task/rw/${randomUUID().replaceAll('-', '')}`,
    );
    streams.set(runId, stream);
    if (create)
      await client.send(new CreateLogStreamCommand({ logGroupName: logGroup, logStreamName: stream }));
    let last = Date.now() - 60_000;
    return {
      runId,
      stream,
      async write(texts) {
        // CloudWatch wants events in time order, no older than 14 days.
        const stamps = texts.map(() => {
          last += 1;
          return last;
        });
        await client.send(
          new PutLogEventsCommand({
            logGroupName: logGroup,
            logStreamName: stream,
            logEvents: texts.map((message, i) => ({ message, timestamp: stamps[i] })),
          }),
        );
        return stamps;
      },
    };
  }

  async function readAll(runId: string, limit: number): Promise<{ lines: LogLine[]; cursor: string }> {
    const logs = reader();
    const lines: LogLine[] = [];
    let page = await logs.read(runId, { limit });
    for (let guard = 0; page.lines.length > 0; guard += 1) {
      expect(guard).toBeLessThan(100);
      expect(page.lines.length).toBeLessThanOrEqual(limit);
      lines.push(...page.lines);
      page = await logs.read(runId, { limit, cursor: page.nextCursor });
    }
    return { lines, cursor: page.nextCursor };
  }

  it('names ECS awslogs streams prefix/container/task id', () => {
    expect(
      awslogsStreamName('run', 'runner', 'arn:aws:ecs:eu-west-1:123456789012:task/rw-cluster/0f3c9a'),
    ).toBe('run/runner/0f3c9a');
    expect(awslogsStreamName('run', 'runner', '0f3c9a')).toBe('run/runner/0f3c9a');
  });

  it('pages through a stream from the head, numbering lines and keeping their time', async () => {
    const { runId, write } = await runWithStream();
    const texts = Array.from({ length: 23 }, (_, i) => `TASK [step ${i}]`);
    const stamps = await write(texts);

    const { lines, cursor } = await readAll(runId, 5);
    const idle = await reader().read(runId, { cursor });

    expect(lines.map((l) => l.text)).toEqual(texts);
    expect(lines.map((l) => l.seq)).toEqual(texts.map((_, i) => i + 1));
    expect(lines.map((l) => l.at)).toEqual(stamps.map((ms) => new Date(ms).toISOString()));
    expect(lines.every((l) => l.stream === 'stdout')).toBe(true);
    expect(idle).toEqual({ lines: [], nextCursor: cursor });
  });

  it('follows a stream: each read returns only what arrived since the cursor', async () => {
    const { runId, write } = await runWithStream();
    const logs = reader();
    await write(['one', 'two']);

    const first = await logs.read(runId);
    await write(['three']);
    const second = await logs.read(runId, { cursor: first.nextCursor });
    const idle = await logs.read(runId, { cursor: second.nextCursor });
    await write(['four', 'five']);
    const third = await logs.read(runId, { cursor: idle.nextCursor });

    expect(first.lines.map((l) => l.text)).toEqual(['one', 'two']);
    expect(second.lines.map((l) => [l.seq, l.text])).toEqual([[3, 'three']]);
    expect(idle).toEqual({ lines: [], nextCursor: second.nextCursor });
    expect(third.lines.map((l) => [l.seq, l.text])).toEqual([
      [4, 'four'],
      [5, 'five'],
    ]);
  });

  it('reads a run with no stream yet as empty with a stable cursor, then from the head once it exists', async () => {
    const { runId, stream } = await runWithStream(false);
    const unknownRun = newId();
    const logs = reader();

    const before = await logs.read(runId);
    const again = await logs.read(runId, { cursor: before.nextCursor });
    const noStream = await logs.read(unknownRun);
    await client.send(new CreateLogStreamCommand({ logGroupName: logGroup, logStreamName: stream }));
    await client.send(
      new PutLogEventsCommand({
        logGroupName: logGroup,
        logStreamName: stream,
        logEvents: [{ message: 'PLAY [all]', timestamp: Date.now() }],
      }),
    );
    const after = await logs.read(runId, { cursor: again.nextCursor });

    expect(before.lines).toEqual([]);
    expect(again).toEqual(before);
    expect(noStream.lines).toEqual([]);
    expect(after.lines.map((l) => [l.seq, l.text])).toEqual([[1, 'PLAY [all]']]);
  });

  it('reads a relaunched run from the head of its new stream, numbering on', async () => {
    const { runId, write } = await runWithStream();
    await write(['attempt 1: a', 'attempt 1: b']);
    const first = await reader().read(runId);

    const relaunch = await runWithStream();
    streams.set(runId, relaunch.stream);
    await relaunch.write(['attempt 2: a']);
    const second = await reader().read(runId, { cursor: first.nextCursor });

    expect(second.lines.map((l) => [l.seq, l.text])).toEqual([[3, 'attempt 2: a']]);
  });

  it('refuses a cursor it did not make, or one whose token CloudWatch rejects, with ValidationError', async () => {
    const { runId, stream, write } = await runWithStream();
    await write(['x']);
    const forged = Buffer.from(JSON.stringify({ s: stream, t: 'f/not-a-token', n: 0 })).toString('base64url');

    for (const cursor of [
      'not a cursor!',
      '%%%',
      '',
      Buffer.from('{"n":-1}').toString('base64url'),
      forged,
    ]) {
      await expect(reader().read(runId, { cursor }), cursor).rejects.toBeInstanceOf(ValidationError);
    }
    await expect(reader().read(runId, { limit: 0 })).rejects.toBeInstanceOf(ValidationError);
  });
});

describe('SqsWorkQueue', () => {
  let client: SQSClient;
  beforeAll(() => {
    client = new SQSClient(moto().clientConfig());
  });
  afterAll(() => client.destroy());

  const newQueue = async (sqs: SQSClient = client): Promise<SqsWorkQueue> => {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: unique('dispatch') }));
    return new SqsWorkQueue({ client: sqs, queueUrl: QueueUrl ?? '' });
  };

  const receiveAll = async (queue: SqsWorkQueue, count: number): Promise<QueueMessage[]> => {
    const got: QueueMessage[] = [];
    for (let i = 0; i < 10 && got.length < count; i += 1) {
      got.push(...(await queue.receive({ max: 10, waitSeconds: 2, visibilityTimeoutSeconds: 30 })));
    }
    return got;
  };

  it('is named after the last segment of its URL', async () => {
    const queue = new SqsWorkQueue({
      client,
      queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/rw-relay',
    });

    expect(queue.name).toBe('rw-relay');
    expect(() => new SqsWorkQueue({ client, queueUrl: 'rw-relay' })).toThrow(ValidationError);
  });

  it('sends a batch of 10 in one request; each arrives once with receive count 1 and its send time', async () => {
    const counted = new SQSClient(moto().clientConfig());
    const requests = countRequests(counted);
    const queue = await newQueue(counted);
    const bodies = Array.from({ length: 10 }, (_, i) => JSON.stringify({ runId: `r-${i}` }));
    const before = Date.now();
    const sent = requests();

    await queue.sendBatch(bodies);
    const batchRequests = requests() - sent;
    const got = await receiveAll(queue, 10);

    expect(batchRequests).toBe(1);
    expect(got.map((m) => m.body).sort()).toEqual([...bodies].sort());
    expect(new Set(got.map((m) => m.id)).size).toBe(10);
    expect(got.every((m) => m.receiveCount === 1)).toBe(true);
    expect(got.every((m) => Date.parse(m.sentAt) >= before - 1000)).toBe(true);
    counted.destroy();
  });

  it('names every entry SQS refused in a batch', async () => {
    const tampered = new SQSClient(moto().clientConfig());
    // Make two entries invalid on the wire, so the real server refuses exactly those (SenderFault).
    tampered.middlewareStack.add(
      (next: (args: any) => Promise<any>) => (args: any) => {
        for (const entry of args.input.Entries ?? []) {
          if (entry.Id === '3' || entry.Id === '7') entry.DelaySeconds = 5000;
        }
        return next(args);
      },
      { step: 'initialize' },
    );
    const queue = await newQueue(tampered);

    const error = await queue
      .sendBatch(Array.from({ length: 10 }, (_, i) => `m-${i}`))
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/refused 2 of 10 messages/);
    expect((error as Error).message).toMatch(/bodies\[3\]: InvalidParameterValue/);
    expect((error as Error).message).toMatch(/bodies\[7\]: InvalidParameterValue/);
    expect((await receiveAll(queue, 8)).map((m) => m.body).sort()).toEqual(
      ['m-0', 'm-1', 'm-2', 'm-4', 'm-5', 'm-6', 'm-8', 'm-9'].sort(),
    );
    tampered.destroy();
  });

  it('sends again an entry that failed on the service side', async () => {
    const flaky = new SQSClient(moto().clientConfig());
    let first = true;
    // The first request loses entry 2 as an InternalError would (not the sender's fault); the server never sees it.
    flaky.middlewareStack.add(
      (next: (args: any) => Promise<any>) => async (args: any) => {
        if (!first || args.input.Entries === undefined) return next(args);
        first = false;
        args.input.Entries = args.input.Entries.filter((e: { Id: string }) => e.Id !== '2');
        const result = await next(args);
        const output = result.output as SendMessageBatchCommandOutput;
        output.Failed = [{ Id: '2', SenderFault: false, Code: 'InternalError', Message: 'try again' }];
        return result;
      },
      { step: 'initialize' },
    );
    const queue = await newQueue(flaky);
    const bodies = Array.from({ length: 5 }, (_, i) => `m-${i}`);

    await queue.sendBatch(bodies);

    expect((await receiveAll(queue, 5)).map((m) => m.body).sort()).toEqual(bodies);
    flaky.destroy();
  });

  it('treats a visibility change on a message no longer in flight as a no-op', async () => {
    const answering = new SQSClient(moto().clientConfig());
    // moto accepts this call; AWS answers MessageNotInflight, injected here.
    answering.middlewareStack.add(
      () => async () => {
        throw Object.assign(new Error('Message not inflight'), { name: 'MessageNotInflight' });
      },
      { step: 'initialize' },
    );
    const queue = new SqsWorkQueue({ client: answering, queueUrl: 'http://127.0.0.1:1/123456789012/q' });

    await expect(queue.changeVisibility('handle', 30)).resolves.toBeUndefined();
    answering.destroy();
  });

  it('lets a missing queue fail loudly', async () => {
    const queue = new SqsWorkQueue({ client, queueUrl: `${moto().endpoint}/123456789012/no-such-queue` });

    await expect(queue.send('x')).rejects.toMatchObject({ name: 'QueueDoesNotExist' });
  });
});

describe('DynamoRunStore error translation', () => {
  let client: DynamoDBClient;
  let tableName: string;
  beforeAll(async () => {
    client = oneRequestAtATime(new DynamoDBClient(moto().clientConfig()));
    tableName = unique('runs');
    await createRunTable(client, tableName);
  });
  afterAll(() => client.destroy());

  const aRun = (overrides: { batchId?: string } = {}): Run =>
    newRun(
      {
        id: newId(),
        kind: 'vm',
        targetId: 'vm-1',
        asset: 'hello/site.yml',
        requestedBy: 'test',
        timeoutSeconds: 60,
        ...overrides,
      },
      new Date().toISOString(),
    );

  /** A run moved on to dispatching by someone else, and a cancel written from its first version: it loses. */
  async function lostCancel(store: DynamoRunStore, run: Run, between?: () => Promise<unknown>) {
    await store.createRun(run);
    const moved = await store.updateRun(
      transition(run, 'dispatching', new Date().toISOString()),
      run.version,
    );
    await between?.();
    const error = await store
      .updateRun(transition(run, 'cancelled', new Date().toISOString()), run.version)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunConflictError);
    expect((error as Error).message).toBe(
      `Run ${run.id} was changed by someone else: expected version 1, found version 2`,
    );
    return { moved, error: error as RunConflictError };
  }

  it('turns a lost condition into RunConflictError with the SDK error as its cause, naming what it found', async () => {
    const { moved, error } = await lostCancel(new DynamoRunStore({ client, tableName }), aRun());

    expect(error.cause).toMatchObject({ name: 'ConditionalCheckFailedException' });
    expect(error.current).toEqual(moved);
  });

  it('is still a RunConflictError, naming nothing to retry from, when the stored body cannot be read', async () => {
    const run = aRun();
    // A body no run can be read from, written by hand after the other writer's change.
    const spoil = () =>
      client.send(
        new UpdateItemCommand({
          TableName: tableName,
          Key: runKey(run.id),
          UpdateExpression: 'SET body = :b',
          ExpressionAttributeValues: { ':b': { S: 'not json' } },
        }),
      );

    const { error } = await lostCancel(new DynamoRunStore({ client, tableName }), run, spoil);

    expect(error.current).toBeUndefined();
  });

  it('answers NotFoundError for a run that does not exist and RunConflictError for a duplicate id', async () => {
    const store = new DynamoRunStore({ client, tableName });
    const ghost = aRun();
    const run = aRun();
    await store.createRun(run);

    await expect(
      store.updateRun(transition(ghost, 'dispatching', new Date().toISOString()), ghost.version),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(store.createRun({ ...run, asset: 'other.yml' })).rejects.toMatchObject({
      name: 'RunConflictError',
      cause: { name: 'ConditionalCheckFailedException' },
    });
  });

  it('counts its own write, repeated after a lost response, as done rather than a conflict', async () => {
    const store = new DynamoRunStore({ client, tableName });
    const run = aRun();
    const next = transition(run, 'dispatching', new Date().toISOString());

    // What an SDK retry does when the first response was lost: the same request again.
    await store.createRun(run);
    const createdAgain = await store.createRun(run);
    await store.updateRun(next, run.version);
    const updatedAgain = await store.updateRun(next, run.version);

    expect(createdAgain).toEqual({ run, created: true });
    expect(updatedAgain).toEqual(next);
    expect(await store.getRun(run.id)).toEqual(next);
  });

  it('writes a batch of more than 100 runs as several transactions', async () => {
    const store = new DynamoRunStore({ client, tableName });
    const batchId = unique('batch');
    const runs = Array.from({ length: 130 }, () => aRun({ batchId }));

    await store.createRuns(runs);

    const page = await store.listRuns({ batchId, limit: 100 });
    const rest = await store.listRuns({ batchId, limit: 100, cursor: page.nextCursor ?? '' });
    expect([...page.runs, ...rest.runs].map((r) => r.id).sort()).toEqual(runs.map((r) => r.id).sort());
  });

  it('undoes the transactions already written when a later one fails', async () => {
    const store = new DynamoRunStore({ client, tableName });
    const existing = aRun();
    await store.createRun(existing);
    const batchId = unique('batch');
    const fresh = Array.from({ length: 105 }, () => aRun({ batchId }));

    const error = await store.createRuns([...fresh, { ...existing, batchId }]).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(RunConflictError);
    expect((error as Error).message).toContain(existing.id);
    expect(await store.listRuns({ batchId, limit: 10 })).toEqual({ runs: [] });
    expect(await store.getRun(fresh[0]?.id ?? '')).toBeUndefined();
    expect(await store.getRun(existing.id)).toEqual(existing);
  });

  it('retries a transaction that collided with a concurrent one', async () => {
    const colliding = new DynamoDBClient(moto().clientConfig());
    let collisions = 0;
    // moto never reports TransactionConflict; AWS does for simultaneous transactions on one item.
    colliding.middlewareStack.add(
      (next: (args: any) => Promise<any>) => async (args: any) => {
        if (args.input.TransactItems !== undefined && collisions < 2) {
          collisions += 1;
          throw new TransactionCanceledException({
            message: 'Transaction cancelled',
            $metadata: {},
            CancellationReasons: [{ Code: 'TransactionConflict' }, { Code: 'None' }],
          });
        }
        return next(args);
      },
      { step: 'initialize' },
    );
    const store = new DynamoRunStore({ client: colliding, tableName });
    const run = aRun();

    const result = await store.createRun(run, { idempotencyKey: unique('key'), fingerprint: 'f' });

    expect(result).toEqual({ run, created: true });
    expect(collisions).toBe(2);
    colliding.destroy();
  });

  it('lets an expired idempotency key start a new run, though moto never deletes the record', async () => {
    const clock = new ManualClock();
    const store = new DynamoRunStore({ client, tableName, clock, idempotencyTtlSeconds: 60 });
    const key = unique('key');
    const first = aRun();
    const second = aRun();
    await store.createRun(first, { idempotencyKey: key, fingerprint: 'f-1' });
    await expect(store.createRun(aRun(), { idempotencyKey: key, fingerprint: 'f-2' })).rejects.toBeInstanceOf(
      IdempotencyMismatchError,
    );

    clock.advance(61);
    const result = await store.createRun(second, { idempotencyKey: key, fingerprint: 'f-2' });

    expect(result).toEqual({ run: second, created: true });
  });
});
