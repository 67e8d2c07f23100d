import { mkdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { API_ROUTES } from '../../functions/api/routes.ts';
import { makeDispatchRuns } from '../../functions/dispatcher/dispatch-runs.ts';
import { makeSettleDeadLetters } from '../../functions/dispatcher/settle-dead-letters.ts';
import {
  type EcsEventOutcome,
  type EcsTaskStateChangeEvent,
  makeEcsTaskStateChange,
} from '../../functions/status-sync/ecs-task-state-change.ts';
import { makeReconcileRuns, RECONCILE_SCHEDULE } from '../../functions/status-sync/reconcile-runs.ts';
import type { RelayAgent } from '../../runners/relay/agent.ts';
import { loadRelayConfig } from '../../runners/relay/config.ts';
import { awsAdapters, buildRelay } from '../../runners/relay/main.ts';
import { SqsWorkQueue } from '../../shared/adapters/sqs/work-queue.ts';
import { BackendPoller, pollerOptionsFrom } from '../../shared/app/poll-backends.ts';
import { type AwsDeps, buildAwsDeps } from '../../shared/composition/aws.ts';
import { loadSettings } from '../../shared/config/settings.ts';
import type { HttpHandler } from '../../shared/http/handler.ts';
import { repeatWithoutOverlap } from '../../shared/lib/repeat.ts';
import { localAssetRoot } from '../local-mode/asset-root.ts';
import { bearerAuthenticator, ensureToken } from '../local-mode/auth-token.ts';
import { closeApiServer, createApiServer } from '../local-mode/http-server.ts';
import { QueuePump } from '../local-mode/queue-pump.ts';
import { bootstrapAws } from './bootstrap.ts';

/** The stack's dispatcher event source: batches of 10 (infra/stacks/control-plane-stack.ts). */
const DISPATCH_BATCH = 10;
/** Short polls keep shutdown prompt; Lambda's poller long-polls 20 s, which changes nothing here but cost. */
const RECEIVE_WAIT_SECONDS = 2;
/** The relay queue's redrive limit, quoted by the relay DLQ's settler (bootstrap.ts makes it so). */
const RELAY_MAX_RECEIVES = 100;

type Env = Readonly<Record<string, string | undefined>>;

export interface AwsModeOptions {
  /**
   * The environment the functions would get (infra/function-environment.ts),
   * plus the REMOTE_WORKER_* variables of local mode. The AWS SDK clients read
   * region, credentials and AWS_ENDPOINT_URL from `process.env`, as on Lambda:
   * run AWS mode in a process whose environment this is.
   */
  readonly env?: Env;
  readonly cwd?: string;
  /** How often the reconciler runs (the stack: every minute). */
  readonly reconcileEverySeconds?: number;
}

export interface AwsMode {
  readonly url: string;
  readonly token: string;
  readonly tokenCreated: boolean;
  readonly dataDir: string;
  /** The environment in effect after bootstrap (resource names, never secret values). */
  readonly env: Env;
  readonly deps: AwsDeps;
  /** The EventBridge rule's target: deliver "ECS Task State Change" events here. */
  readonly ecsTaskStateChange: (event: EcsTaskStateChangeEvent) => Promise<EcsEventOutcome>;
  readonly relayRunning: boolean;
  close(options?: { drainMs?: number }): Promise<void>;
}

/** The DLQ of a queue, from its RedrivePolicy: a deployed stack needs no extra variable for it. */
async function deadLetterQueueOf(sqs: SQSClient, queueUrl: string): Promise<string | undefined> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['RedrivePolicy'] }),
  );
  const policy = Attributes?.RedrivePolicy;
  if (policy === undefined) return undefined;
  const arn = String((JSON.parse(policy) as { deadLetterTargetArn?: unknown }).deadLetterTargetArn ?? '');
  const [, , , , account, name] = arn.split(':');
  if (name === undefined) return undefined;
  const { QueueUrl } = await sqs.send(
    new GetQueueUrlCommand({
      QueueName: name,
      ...(account === undefined ? {} : { QueueOwnerAWSAccountId: account }),
    }),
  );
  return QueueUrl;
}

/**
 * AWS mode in one process (`REMOTE_WORKER_MODE=aws npm start`): the API
 * handlers over HTTP with the AWS composition (DynamoDB, SQS, S3, CloudWatch
 * Logs, the ECS launcher …), wired as the stack wires them —
 * - the dispatcher fed from the dispatch queue as its SQS event source
 *   mapping would: batches of 10, partial batch failures left on the queue
 *   for their visibility timeout, dead letters to the DLQ's settler;
 * - the relay queue's DLQ settled the same way, and a relay agent on the
 *   relay queue (unless REMOTE_WORKER_RELAY=0);
 * - `ecsTaskStateChange` for the ECS events (EventBridge's target; an
 *   emulator sends none: see tools/ecs-task-stand-in);
 * - the reconciler every minute and the backend poller every
 *   `poll_interval_seconds`.
 * Everything honours AWS_ENDPOINT_URL. With REMOTE_WORKER_BOOTSTRAP=1 the
 * missing resources are created first (bootstrap.ts). API Gateway's IAM
 * authorizer is not here: the API takes local mode's bearer token.
 *
 * @example
 * const aws = await startAwsMode({ env: process.env });
 * console.log(aws.url, aws.token);
 */
export async function startAwsMode(options: AwsModeOptions = {}): Promise<AwsMode> {
  const cwd = options.cwd ?? process.cwd();
  const given = options.env ?? process.env;
  const booted =
    given.REMOTE_WORKER_BOOTSTRAP === '1' ? await bootstrapAws(given, loadSettings({ env: given })) : {};
  const env: Env = { ...given, ...booted };
  const deps = buildAwsDeps(env);
  const { logger, settings } = deps;

  const dataDir = resolve(cwd, env.REMOTE_WORKER_DATA_DIR || '.remote-worker');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const { token, created } = await ensureToken(dataDir, env.REMOTE_WORKER_TOKEN);

  const apiDeps = { ...deps, authenticate: bearerAuthenticator(token, 'aws-mode') };
  const handlers: Record<string, HttpHandler> = {};
  for (const [key, make] of Object.entries(API_ROUTES)) handlers[key] = make(apiDeps);
  const server = createApiServer(handlers);
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(Number(env.PORT || 8080), env.HOST || '127.0.0.1', () => ok());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;

  const sqs = new SQSClient({});
  const queue = (queueUrl: string) => new SqsWorkQueue({ client: sqs, queueUrl });
  const dispatchUrl = env.DISPATCH_QUEUE_URL ?? '';
  const pumps = [
    new QueuePump(queue(dispatchUrl), makeDispatchRuns(deps), logger, {
      batchSize: DISPATCH_BATCH,
      waitSeconds: RECEIVE_WAIT_SECONDS,
    }),
  ];
  const dispatchDlq = await deadLetterQueueOf(sqs, dispatchUrl);
  if (dispatchDlq !== undefined) {
    pumps.push(
      new QueuePump(queue(dispatchDlq), makeSettleDeadLetters(deps), logger, {
        waitSeconds: RECEIVE_WAIT_SECONDS,
      }),
    );
  }
  const relayUrl = env.RELAY_QUEUE_URL;
  const relayDlq =
    relayUrl === undefined || relayUrl === '' ? undefined : await deadLetterQueueOf(sqs, relayUrl);
  if (relayDlq !== undefined) {
    pumps.push(
      new QueuePump(queue(relayDlq), makeSettleDeadLetters(deps, RELAY_MAX_RECEIVES), logger, {
        waitSeconds: RECEIVE_WAIT_SECONDS,
      }),
    );
  }
  for (const pump of pumps) pump.start();

  // The on-prem relay agent, on this host: assets from the same root as local mode's relay.
  let relay: RelayAgent | undefined;
  if (relayUrl !== undefined && relayUrl !== '' && env.REMOTE_WORKER_RELAY !== '0') {
    const config = loadRelayConfig({
      RELAY_ID: 'aws-mode',
      RELAY_ASSET_ROOT: await localAssetRoot({ settings, cwd, dataDir }),
      RELAY_WORK_DIR: join(dataDir, 'relay'),
      RELAY_POLL_WAIT_SECONDS: String(RECEIVE_WAIT_SECONDS),
      ...env,
      RELAY_QUEUE_URL: relayUrl,
    });
    relay = buildRelay(config, await awsAdapters(config, logger), logger, settings);
    await relay.start();
  }

  const ecsTaskStateChange = makeEcsTaskStateChange({ ...deps, containerName: deps.ecsContainerName });

  const reconcile = makeReconcileRuns(deps, RECONCILE_SCHEDULE);
  const reconciling = repeatWithoutOverlap(reconcile, (options.reconcileEverySeconds ?? 60) * 1000, (error) =>
    logger.error('reconcile failed', { error: error as Error }),
  );
  const poller = new BackendPoller(deps, pollerOptionsFrom(settings));
  const polling = poller.start();

  logger.info('aws mode started', {
    url,
    runners: Object.keys(deps.launchers),
    unavailable: deps.unavailable,
  });
  return {
    url,
    token,
    tokenCreated: created,
    dataDir,
    env,
    deps,
    ecsTaskStateChange,
    relayRunning: relay !== undefined,
    async close({ drainMs = 10_000 } = {}) {
      await Promise.all([reconciling.stop(), polling?.stop()]);
      await closeApiServer(server);
      await Promise.all(pumps.map((p) => p.stop()));
      await relay?.stop(drainMs);
      sqs.destroy();
    },
  };
}
