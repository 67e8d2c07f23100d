import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeDispatchRuns, type SqsBatchHandler } from '../../functions/dispatcher/dispatch-runs.ts';
import { makeSettleDeadLetters } from '../../functions/dispatcher/settle-dead-letters.ts';
import { LocalAssetStore } from '../../shared/adapters/local/asset-store.ts';
import { openDatabase, type SqliteDatabase } from '../../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../shared/adapters/sqlite/target-store.ts';
import { SqliteWorkQueue } from '../../shared/adapters/sqlite/work-queue.ts';
import type { AppDeps } from '../../shared/app/deps.ts';
import { loadSettings } from '../../shared/config/settings.ts';
import { LauncherUnavailableError } from '../../shared/domain/errors.ts';
import { encodeRunMessage } from '../../shared/domain/run-message.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { type MotoServer, startMoto } from '../support/moto.ts';
import {
  createQueuedRun,
  PLAYBOOKS_ROOT,
  RecordingLauncher,
  silentLogger,
  vmTarget,
} from '../unit/app/harness.ts';

/**
 * The dispatch queue's redrive on a real SQS implementation (moto): a message
 * whose dispatch keeps failing retryably is received maxReceiveCount times,
 * then SQS moves it to the DLQ, and the DLQ handler fails its run with the
 * reason. Lambda's event source mapping is played by `pump`: receive, call the
 * handler, delete what did not fail (partial batch response).
 */
describe('dispatch dead-letter queue on SQS (moto)', () => {
  const MAX_RECEIVES = 2;
  let moto: MotoServer;
  let sqs: SQSClient;
  let db: SqliteDatabase;
  let queueUrl: string;
  let dlqUrl: string;
  const context = {} as Context;

  /** One event-source-mapping poll of `url` into `handler`; returns the messages it received. */
  const pump = async (url: string, handler: SqsBatchHandler): Promise<Message[]> => {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) return [];
    const event: SQSEvent = {
      Records: Messages.map((m) => ({
        messageId: m.MessageId ?? '',
        receiptHandle: m.ReceiptHandle ?? '',
        body: m.Body ?? '',
        attributes: {
          ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1',
          SentTimestamp: m.Attributes?.SentTimestamp ?? '0',
          SenderId: 'test',
          ApproximateFirstReceiveTimestamp: m.Attributes?.ApproximateFirstReceiveTimestamp ?? '0',
        },
        messageAttributes: {},
        md5OfBody: m.MD5OfBody ?? '',
        eventSource: 'aws:sqs',
        eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:queue',
        awsRegion: 'us-east-1',
      })),
    };
    const { batchItemFailures } = await handler(event, context);
    const failed = new Set(batchItemFailures.map((f) => f.itemIdentifier));
    for (const m of Messages) {
      if (!failed.has(m.MessageId ?? '')) {
        await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
      }
    }
    return Messages;
  };

  const depth = async (url: string): Promise<number> => {
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return (
      Number(Attributes?.ApproximateNumberOfMessages) +
      Number(Attributes?.ApproximateNumberOfMessagesNotVisible)
    );
  };

  beforeAll(async () => {
    moto = await startMoto();
    sqs = new SQSClient(moto.clientConfig());
    ({ QueueUrl: dlqUrl = '' } = await sqs.send(new CreateQueueCommand({ QueueName: 'dispatch-dlq' })));
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }),
    );
    ({ QueueUrl: queueUrl = '' } = await sqs.send(
      new CreateQueueCommand({
        QueueName: 'dispatch',
        Attributes: {
          // One second, so a failed message comes back quickly.
          VisibilityTimeout: '1',
          RedrivePolicy: JSON.stringify({
            deadLetterTargetArn: Attributes?.QueueArn,
            maxReceiveCount: MAX_RECEIVES,
          }),
        },
      }),
    ));
    db = openDatabase(':memory:');
  }, 60_000);

  afterAll(async () => {
    db?.close();
    sqs?.destroy();
    await moto?.stop();
  });

  it('moves a message whose dispatch keeps failing to the DLQ, and the DLQ handler fails its run with the reason', async () => {
    const store = new SqliteRunStore({ db });
    const targets = new SqliteTargetStore({ db });
    await targets.putTarget(vmTarget('vm-1'));
    const launcher = new RecordingLauncher('local');
    const deps: AppDeps = {
      store,
      targets,
      // Only the reconciler sends on it; the test sends to SQS itself.
      dispatchQueue: new SqliteWorkQueue({ db, name: 'unused', visibilityTimeoutSeconds: 30 }),
      logs: new SqliteLogStore({ db }),
      assets: new LocalAssetStore({ root: PLAYBOOKS_ROOT }),
      settings: loadSettings({ env: { DISPATCH_MAX_RECEIVE_COUNT: String(MAX_RECEIVES) } }),
      launchers: { local: launcher },
      relay: { available: true },
      clock: systemClock,
      newId: () => 'unused',
      logger: silentLogger(),
    };
    const run = await createQueuedRun(store, systemClock, { id: 'run-poison' });
    launcher.failuresFor.set(
      run.id,
      Array.from(
        { length: 50 },
        () => new LauncherUnavailableError('ECS RunTask failed, will retry (ThrottlingException)'),
      ),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: encodeRunMessage(run.id) }));
    const dispatch = makeDispatchRuns({ ...deps, ownerId: 'dispatcher' });
    const settle = makeSettleDeadLetters(deps);

    // Poll the dispatch queue until SQS has redriven the message (the receive after the limit moves it).
    const until = Date.now() + 30_000;
    let dead: Message[] = [];
    while (dead.length === 0 && Date.now() < until) {
      await pump(queueUrl, dispatch);
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: dlqUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 0,
          VisibilityTimeout: 0,
        }),
      );
      dead = Messages;
    }

    expect(dead.map((m) => m.Body)).toEqual([encodeRunMessage(run.id)]);
    expect(launcher.launchesFor(run.id).map((l) => l.key)).toEqual(['run-poison#1', 'run-poison#1']);
    expect((await store.getRun(run.id))?.state).toBe('dispatching');

    expect(await pump(dlqUrl, settle)).toHaveLength(1);

    expect(await store.getRun(run.id)).toMatchObject({
      state: 'failed',
      // The wording is settleDeadLetter's (shared/app/dispatch.ts); what matters here is the count and the DLQ.
      reason: expect.stringMatching(
        /failed 2 times in a row; the message was moved to the dead-letter queue/,
      ),
    });
    expect(await depth(queueUrl)).toBe(0);
    expect(await depth(dlqUrl)).toBe(0);
  });
});
