import { randomUUID } from 'node:crypto';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { DynamoRunStore } from '../../shared/adapters/dynamodb/run-store.ts';
import { DynamoTargetStore } from '../../shared/adapters/dynamodb/target-store.ts';
import { SqsWorkQueue } from '../../shared/adapters/sqs/work-queue.ts';
import { createRunTable, oneRequestAtATime, useMoto } from '../support/moto.ts';
import { runAdvanceContract } from './run-advance.contract.ts';
import { runClaimContract } from './run-claim.contract.ts';
import { runStoreContract } from './run-store.contract.ts';
import { targetStoreContract } from './target-store.contract.ts';
import { workQueueContract } from './work-queue.contract.ts';

/*
 * The RunStore, TargetStore and WorkQueue contracts against moto 5.2.1 (one server for this file).
 *
 * Where moto differs from AWS, and why these tests do not depend on it:
 * - DynamoDB GSIs are updated synchronously in moto; on AWS they trail the
 *   table by a moment. The listRuns/listActiveRuns tests read an index right
 *   after a write, so they prove the query logic, not read-after-write on AWS
 *   (DynamoRunStore documents that index reads are eventually consistent).
 * - DynamoDB TTL never expires items in moto; the store checks `expiresAt` in
 *   its own conditions, so nothing here waits for TTL.
 * - moto's DynamoDB is not thread-safe: concurrent TransactWriteItems make it
 *   answer HTML 500s now and then (see `oneRequestAtATime`), so the store's
 *   client here sends one request at a time. Concurrent calls still
 *   interleave their requests, so a losing retry meets ConditionalCheckFailed
 *   as on AWS; TransactionConflict, which AWS reports for truly simultaneous
 *   transactions, is exercised with the error injected in
 *   test/integration/aws-adapters.test.ts.
 * - SQS accepts stale receipt handles and (like AWS, which does not promise
 *   otherwise) may delete through them: the queue contract runs with
 *   `staleReceiptHandleKeepsMessage: false`.
 *
 * The LogStore contract does not apply to AWS: CloudWatchLogReader only reads
 * (the ECS awslogs driver writes), CloudWatch keeps no stdout/stderr/system
 * distinction, and it refuses events older than 14 days (the contract writes
 * 2026-01-01 timestamps). Its behaviour is covered in
 * test/integration/aws-adapters.test.ts.
 */

const moto = useMoto();

const dynamoRunStore = async () => {
  const client = oneRequestAtATime(new DynamoDBClient(moto().clientConfig()));
  const tableName = `runs-${randomUUID()}`;
  await createRunTable(client, tableName);
  return {
    store: new DynamoRunStore({ client, tableName }),
    cleanup: async () => {
      await client.send(new DeleteTableCommand({ TableName: tableName }));
      client.destroy();
    },
  };
};
runStoreContract('dynamodb (moto)', dynamoRunStore);
runClaimContract('dynamodb (moto)', dynamoRunStore);
runAdvanceContract('dynamodb (moto)', dynamoRunStore, { repeatCountsAsAdvanced: true });

targetStoreContract('dynamodb (moto)', async () => {
  const client = oneRequestAtATime(new DynamoDBClient(moto().clientConfig()));
  const tableName = `runs-${randomUUID()}`;
  await createRunTable(client, tableName);
  return {
    targets: new DynamoTargetStore({ client, tableName }),
    cleanup: async () => {
      await client.send(new DeleteTableCommand({ TableName: tableName }));
      client.destroy();
    },
  };
});

workQueueContract(
  'sqs (moto)',
  async ({ visibilityTimeoutSeconds, maxReceiveCount }) => {
    const client = new SQSClient(moto().clientConfig());
    const suffix = randomUUID().slice(0, 8);
    const dlq = await client.send(new CreateQueueCommand({ QueueName: `dispatch-dlq-${suffix}` }));
    const dlqUrl = dlq.QueueUrl ?? '';
    const { Attributes } = await client.send(
      new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }),
    );
    // What infrastructure sets on the real queue: the redrive policy lives on the queue, not in code.
    const main = await client.send(
      new CreateQueueCommand({
        QueueName: `dispatch-${suffix}`,
        Attributes: {
          VisibilityTimeout: String(visibilityTimeoutSeconds),
          RedrivePolicy: JSON.stringify({
            deadLetterTargetArn: Attributes?.QueueArn,
            maxReceiveCount,
          }),
        },
      }),
    );
    const mainUrl = main.QueueUrl ?? '';
    return {
      queue: new SqsWorkQueue({ client, queueUrl: mainUrl }),
      deadLetter: new SqsWorkQueue({ client, queueUrl: dlqUrl }),
      cleanup: async () => {
        await client.send(new DeleteQueueCommand({ QueueUrl: mainUrl }));
        await client.send(new DeleteQueueCommand({ QueueUrl: dlqUrl }));
        client.destroy();
      },
    };
  },
  { staleReceiptHandleKeepsMessage: false },
);
