import type { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import type { ECSClient } from '@aws-sdk/client-ecs';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { CloudWatchLogReaderOptions } from '../adapters/cloudwatch-logs/log-reader.ts';
import { sqsQueueName } from '../adapters/sqs/queue-name.ts';
import { onFirstUse } from '../lib/on-first-use.ts';
import type { Clock } from '../ports/clock.ts';
import type { LogReader } from '../ports/log-store.ts';
import type { SecretSource } from '../ports/secret-source.ts';
import type { WorkQueue } from '../ports/work-queue.ts';
import { lazySecretsManagerClient } from './lazy-run-secrets.ts';

/*
 * The AWS SDK clients and adapters a Lambda function may or may not call,
 * each loaded — package, adapter and all — on its first call rather than at
 * cold start. One composition (aws.ts) serves every function that launches,
 * watches, cancels or settles runs, and each calls a different few services:
 * the ECS event function never sends to SQS, the log reader never touches
 * ECS, the poller reads neither. Every client package costs its function
 * several milliseconds of CPU to load (bench/lambda-bundles.ts); this way a
 * function pays only for the ones its call reaches. Same adapters, same
 * calls, same errors; a failed load is not kept (onFirstUse).
 */

/** The SDK clients besides DynamoDB (which every function reads), each made on its first use. */
export function lazyAwsClients(): LazyAwsClients {
  return {
    sqs: onFirstUse(async () => new (await import('@aws-sdk/client-sqs')).SQSClient({})),
    logs: onFirstUse(
      async () => new (await import('@aws-sdk/client-cloudwatch-logs')).CloudWatchLogsClient({}),
    ),
    ecs: onFirstUse(async () => new (await import('@aws-sdk/client-ecs')).ECSClient({})),
    secretsManager: lazySecretsManagerClient(),
  };
}

export interface LazyAwsClients {
  readonly sqs: () => Promise<SQSClient>;
  readonly logs: () => Promise<CloudWatchLogsClient>;
  readonly ecs: () => Promise<ECSClient>;
  readonly secretsManager: () => Promise<SecretsManagerClient>;
}

/**
 * The SQS queue at `queueUrl` (adapters/sqs/work-queue.ts). Its name is known
 * at once; a URL that is not a queue's throws here, as the adapter would.
 *
 * @example
 * const dispatch = lazySqsQueue(clients.sqs, env.DISPATCH_QUEUE_URL);
 * await dispatch.send(body); // loads the SQS SDK, then sends
 */
export function lazySqsQueue(client: () => Promise<SQSClient>, queueUrl: string): WorkQueue {
  const name = sqsQueueName(queueUrl);
  const queue = onFirstUse(async () => {
    const [{ SqsWorkQueue }, sqs] = await Promise.all([import('../adapters/sqs/work-queue.ts'), client()]);
    return new SqsWorkQueue({ client: sqs, queueUrl });
  });
  return {
    name,
    send: async (body, options) => (await queue()).send(body, options),
    sendBatch: async (bodies) => (await queue()).sendBatch(bodies),
    receive: async (options) => (await queue()).receive(options),
    delete: async (receiptHandle) => (await queue()).delete(receiptHandle),
    changeVisibility: async (receiptHandle, timeoutSeconds) =>
      (await queue()).changeVisibility(receiptHandle, timeoutSeconds),
  };
}

/** Run output from CloudWatch Logs (adapters/cloudwatch-logs/log-reader.ts). */
export function lazyLogReader(
  client: () => Promise<CloudWatchLogsClient>,
  options: Omit<CloudWatchLogReaderOptions, 'client'>,
): LogReader {
  const reader = onFirstUse(async () => {
    const [{ CloudWatchLogReader }, logs] = await Promise.all([
      import('../adapters/cloudwatch-logs/log-reader.ts'),
      client(),
    ]);
    return new CloudWatchLogReader({ ...options, client: logs });
  });
  return { read: async (runId, readOptions) => (await reader()).read(runId, readOptions) };
}

/** Stored secret values from Secrets Manager, cached as the adapter caches them (adapters/secrets-manager/secret-source.ts). */
export function lazySecretSource(client: () => Promise<SecretsManagerClient>, clock: Clock): SecretSource {
  const source = onFirstUse(async () => {
    const [{ SecretsManagerSecretSource }, secretsManager] = await Promise.all([
      import('../adapters/secrets-manager/secret-source.ts'),
      client(),
    ]);
    return new SecretsManagerSecretSource({ client: secretsManager, clock });
  });
  return { get: async (name) => (await source()).get(name) };
}
