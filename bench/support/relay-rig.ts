import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { RelayAgent } from '../../runners/relay/agent.ts';
import { DynamoLogStore } from '../../shared/adapters/dynamodb/log-store.ts';
import { DynamoRunStore } from '../../shared/adapters/dynamodb/run-store.ts';
import { DynamoTargetStore } from '../../shared/adapters/dynamodb/target-store.ts';
import { LocalAssetStore } from '../../shared/adapters/local/asset-store.ts';
import { RelayLauncher } from '../../shared/adapters/relay/relay-launcher.ts';
import { SqsWorkQueue } from '../../shared/adapters/sqs/work-queue.ts';
import { settleRun } from '../../shared/app/run-updates.ts';
import { amend, newRun, type Run, transition } from '../../shared/domain/run.ts';
import { decodeRelayMessage } from '../../shared/domain/run-message.ts';
import type { Target } from '../../shared/domain/target.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { createRunTable } from '../../test/support/moto.ts';
import type { CallCounter } from './call-counter.ts';
import { noopExecutor } from './noop-executor.ts';

/** When, per run, the calls on its way to the start answered or went out (performance.now()). */
export interface RelayMoments {
  /** The dispatcher's SendMessage answered. */
  sent?: number;
  /** The relay's ReceiveMessage holding it answered. */
  received?: number;
  /** The relay's claim (UpdateItem) went out, and answered. */
  claimSent?: number;
  claimed?: number;
}

type Step = (
  next: (args: unknown) => Promise<unknown>,
  context: { commandName?: string },
) => (args: unknown) => Promise<unknown>;

/** Records RelayMoments from the relay's own clients, by run id (its message body, its claim's key). */
function recordMoments(moments: Map<string, RelayMoments>, sqs: SQSClient, dynamodb: DynamoDBClient): void {
  const of = (id: string) => moments.get(id) ?? moments.set(id, {}).get(id) ?? {};
  type Io = { input?: { MessageBody?: string; Key?: { pk?: { S?: string } } } };
  const onSqs: Step = (next, context) => async (args) => {
    const answer = (await next(args)) as { output?: { Messages?: { Body?: string }[] } };
    const now = performance.now();
    if (context.commandName === 'SendMessageCommand') {
      const id = decodeRelayMessage((args as Io).input?.MessageBody ?? '')?.runId;
      if (id !== undefined) of(id).sent = now;
    }
    for (const m of answer.output?.Messages ?? []) {
      const id = decodeRelayMessage(m.Body ?? '')?.runId;
      if (id !== undefined) of(id).received ??= now;
    }
    return answer;
  };
  const onDynamo: Step = (next, context) => async (args) => {
    const id = (args as Io).input?.Key?.pk?.S?.replace(/^RUN#/, '');
    if (context.commandName !== 'UpdateItemCommand' || id === undefined) return next(args);
    of(id).claimSent ??= performance.now();
    const answer = await next(args);
    of(id).claimed ??= performance.now();
    return answer;
  };
  (sqs.middlewareStack as unknown as { add(m: Step, o: object): void }).add(onSqs, {
    step: 'initialize',
    name: 'relayRigMoments',
  });
  (dynamodb.middlewareStack as unknown as { add(m: Step, o: object): void }).add(onDynamo, {
    step: 'initialize',
    name: 'relayRigMoments',
  });
}

const PLAYBOOKS = fileURLToPath(new URL('../../examples/playbooks', import.meta.url));
const IMAGE = 'chrweav/ansible-winrm:latest';

/**
 * The relay on AWS adapters (DynamoDB runs and logs, the SQS relay queue)
 * against one moto server, with counted clients and a no-op executor, for
 * the relay bench and the relay call-count test. `handOver` plays the
 * dispatcher: the run's writes up to the send (uncounted), the send through
 * RelayLauncher, then the dispatcher's `launched` write.
 */
export async function relayRig(
  config: DynamoDBClientConfig,
  counter: CallCounter,
  /** The relay's long-poll wait: 20 s as deployed; a test that stops the relay soon after wants less. */
  pollWaitSeconds = 20,
) {
  const setupDynamo = new DynamoDBClient(config);
  const setupSqs = new SQSClient(config);
  const dynamodb = counter.count('DynamoDB', new DynamoDBClient(config));
  const sqs = counter.count('SQS', new SQSClient(config));
  // Output is counted apart: how many chunks it ships in depends on when the shipper flushes.
  const logsDynamodb = counter.count('DynamoDB(logs)', new DynamoDBClient(config));
  const moments = new Map<string, RelayMoments>();
  recordMoments(moments, sqs, dynamodb);
  const tableName = `runs-${randomUUID().slice(0, 8)}`;
  await createRunTable(setupDynamo, tableName);
  const queueUrl = async (name: string) =>
    (await setupSqs.send(new CreateQueueCommand({ QueueName: `${name}-${randomUUID().slice(0, 8)}` })))
      .QueueUrl ?? '';
  const relayUrl = await queueUrl('rw-relay');
  const floorUrl = await queueUrl('rw-floor');

  const setupStore = new DynamoRunStore({ client: setupDynamo, tableName });
  // The floor's own plain client, as the floor's SQS clients are: the claim as the floor with the claim makes it.
  const floorDynamo = new DynamoDBClient(config);
  const floorStore = new DynamoRunStore({ client: floorDynamo, tableName });
  const store = new DynamoRunStore({ client: dynamodb, tableName });
  const targets = new DynamoTargetStore({ client: dynamodb, tableName });
  const logs = new DynamoLogStore({ client: logsDynamodb, tableName });
  const queue = new SqsWorkQueue({ client: sqs, queueUrl: relayUrl });
  const launcher = new RelayLauncher(queue, logs);
  const target: Target = await new DynamoTargetStore({ client: setupDynamo, tableName }).putTarget({
    id: 'vm-1',
    kind: 'vm',
    cloud: 'local',
    name: 'vm-1',
    address: '127.0.0.1',
    connection: 'ssh',
    createdAt: systemClock.now(),
    updatedAt: systemClock.now(),
  });

  /** When each run's task was asked to start (performance.now()); `gate`, when set, holds every start open. */
  const started = new Map<string, number>();
  let gate: Promise<void> | undefined;
  const executor = noopExecutor(async (runId) => {
    started.set(runId, performance.now());
    await gate;
  });
  const workRoot = mkdtempSync(join(tmpdir(), 'rw-relay-rig-'));
  const agent = new RelayAgent({
    id: 'rig',
    store,
    targets,
    queue,
    logs,
    executor,
    secrets: { get: async () => '' },
    assets: new LocalAssetStore({ root: PLAYBOOKS }),
    clock: systemClock,
    logger: new Logger({ serviceName: 'relay-rig', logLevel: 'SILENT' }),
    workRoot,
    concurrency: 4,
    pollWaitSeconds,
  });

  /** A run as the dispatcher leaves it just before its send: claimed, launch intent `local` (uncounted). */
  const intent = async (id: string): Promise<Run> => {
    const draft = newRun(
      {
        id,
        kind: 'vm',
        targetId: 'vm-1',
        asset: 'hello/site.yml',
        requestedBy: 'bench',
        timeoutSeconds: 600,
      },
      systemClock.now(),
    );
    const { run } = await setupStore.createRun({ ...draft, runner: 'local', image: IMAGE });
    const at = systemClock.now();
    const claimed = transition(run, 'dispatching', at, { patch: { owner: 'dispatcher:bench', attempt: 1 } });
    return setupStore.updateRun(
      amend(claimed, at, { launch: { backend: 'local', intentAt: at } }),
      run.version,
    );
  };

  return {
    store,
    queue,
    agent,
    started,
    /** Per run: when its send, receive and claim answered (with `started`, the path to the start in parts). */
    moments,
    floorUrl,
    sqs: setupSqs,
    intent,
    /** Whether the relay queue holds no message, visible or not (uncounted). */
    async queueEmpty(): Promise<boolean> {
      const { Attributes: a } = await setupSqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: relayUrl,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return a?.ApproximateNumberOfMessages === '0' && a.ApproximateNumberOfMessagesNotVisible === '0';
    },
    /** The relay's claim of `run` as sent, made by the floor's plain client (uncounted; no relay involved). */
    floorClaim: (run: Run) =>
      floorStore.claimRelayRun(run.id, {
        owner: 'relay:floor',
        at: systemClock.now(),
        sentVersion: run.version,
      }),
    /** The run's state, read with the uncounted client. */
    stateOf: async (id: string) => (await setupStore.getRun(id))?.state,
    /** Hold every task start open until the answer is called. */
    holdStarts(): () => void {
      let open = () => {};
      gate = new Promise((resolve) => {
        open = resolve;
      });
      return () => {
        gate = undefined;
        open();
      };
    },
    /** The dispatcher's send through RelayLauncher, with the target it read when `withTarget`. */
    send: (run: Run, withTarget = true) =>
      launcher.launch({ run, image: IMAGE, ...(withTarget ? { known: { target } } : {}) }),
    /** The dispatcher's `launched` write after its send, as dispatchRun makes it. */
    launched: (run: Run, handle: string) =>
      settleRun(
        store,
        run.id,
        (r) =>
          r.state === 'dispatching'
            ? transition(r, 'launched', systemClock.now(), {
                patch: { launch: { backend: 'local', intentAt: r.launch?.intentAt ?? '', handle } },
              })
            : r,
        run,
      ),
    /** The dispatcher's send, then its `launched` write. */
    async handOver(run: Run, withTarget = true): Promise<void> {
      await this.launched(run, await this.send(run, withTarget));
    },
    async close(): Promise<void> {
      await agent.stop(5_000);
      rmSync(workRoot, { recursive: true, force: true });
      for (const c of [setupDynamo, setupSqs, dynamodb, logsDynamodb, sqs, floorDynamo]) c.destroy();
    },
  };
}
