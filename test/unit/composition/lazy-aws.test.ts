import type { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { lazyLogReader, lazySecretSource, lazySqsQueue } from '../../../shared/composition/lazy-aws.ts';
import { lazySubmittedRunSecrets } from '../../../shared/composition/lazy-run-secrets.ts';
import { ValidationError } from '../../../shared/domain/errors.ts';

const QUEUE = 'https://sqs.eu-west-1.amazonaws.com/111111111111/dispatch';

/** A client loader over a `send` that records each command and answers `answer(command)`; counts its loads. */
function fakeClient<C>(answer: (command: { constructor: { name: string }; input: unknown }) => unknown) {
  const sent: { command: string; input: unknown }[] = [];
  let loads = 0;
  const client = {
    send: async (command: { constructor: { name: string }; input: unknown }) => {
      sent.push({ command: command.constructor.name, input: command.input });
      return answer(command);
    },
  };
  return {
    sent,
    loads: () => loads,
    load: async () => {
      loads += 1;
      return client as unknown as C;
    },
  };
}

const clock = { now: () => new Date(1_000).toISOString(), nowMs: () => 1_000 };

describe('lazy AWS adapters', () => {
  it('an SQS queue is named at once, loads its client on the first call, and sends through the adapter', async () => {
    const sqs = fakeClient<SQSClient>(() => ({ MessageId: 'm-1' }));
    const queue = lazySqsQueue(sqs.load, QUEUE);
    expect(queue.name).toBe('dispatch');
    expect(sqs.loads()).toBe(0);
    await expect(queue.send('{"runId":"r1"}')).resolves.toBe('m-1');
    await queue.delete('handle-1');
    expect(sqs.loads()).toBe(1);
    expect(sqs.sent).toEqual([
      { command: 'SendMessageCommand', input: { QueueUrl: QUEUE, MessageBody: '{"runId":"r1"}' } },
      { command: 'DeleteMessageCommand', input: { QueueUrl: QUEUE, ReceiptHandle: 'handle-1' } },
    ]);
  });

  it('refuses what is not a queue URL when it is built, as the adapter does', () => {
    expect(() => lazySqsQueue(fakeClient<SQSClient>(() => ({})).load, 'dispatch')).toThrow(ValidationError);
  });

  it('a failed load is not kept: the next call loads again', async () => {
    let attempts = 0;
    const queue = lazySqsQueue(async () => {
      attempts += 1;
      if (attempts === 1) throw new Error('no network');
      return { send: async () => ({ MessageId: 'm-2' }) } as unknown as SQSClient;
    }, QUEUE);
    await expect(queue.send('x')).rejects.toThrow('no network');
    await expect(queue.send('x')).resolves.toBe('m-2');
  });

  it('reads run output from the stream the run names', async () => {
    const logs = fakeClient<CloudWatchLogsClient>(() => ({
      events: [{ message: 'hello', timestamp: 5_000 }],
      nextForwardToken: 'f/1',
    }));
    const reader = lazyLogReader(logs.load, { logGroup: '/rw/runs', streamFor: () => 'run/runner/t1' });
    const page = await reader.read('r1');
    expect(page.lines.map((l) => l.text)).toEqual(['hello']);
    expect(logs.sent[0]).toMatchObject({
      command: 'GetLogEventsCommand',
      input: { logGroupName: '/rw/runs', logStreamName: 'run/runner/t1' },
    });
  });

  it('a secret value is fetched once and then cached, as the adapter caches it', async () => {
    const sm = fakeClient<SecretsManagerClient>(() => ({ SecretString: 's3cr3t' }));
    const secrets = lazySecretSource(sm.load, clock);
    await expect(secrets.get('rw/ssh-key')).resolves.toBe('s3cr3t');
    await expect(secrets.get('rw/ssh-key')).resolves.toBe('s3cr3t');
    expect(sm.sent.map((s) => s.command)).toEqual(['GetSecretValueCommand']);
  });

  it('per-run secrets say which names are theirs without loading Secrets Manager', async () => {
    const sm = fakeClient<SecretsManagerClient>(() => ({ ARN: 'arn:secret' }));
    const runSecrets = lazySubmittedRunSecrets(sm.load, 'rw/dev/runs/');
    expect(runSecrets.owns('rw/dev/runs/r1/ansible_password')).toBe(true);
    expect(runSecrets.owns('rw/other')).toBe(false);
    await runSecrets.deleteFor('r1', []);
    expect(sm.loads()).toBe(0);
    await expect(runSecrets.put('r1', 'ansible_password', 'pw')).resolves.toBe(
      'rw/dev/runs/r1/ansible_password',
    );
    expect(sm.loads()).toBe(1);
    expect(sm.sent[0]?.command).toBe('CreateSecretCommand');
  });
});
