import { GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { Clock } from '../../ports/clock.ts';
import { accountKey, errorName, type Item, type RunTable, S } from './items.ts';

/** The table, and the clock that stamps when a hold was taken. */
export interface HoldTable extends RunTable {
  readonly clock: Clock;
}

/*
 * Managed-account holds (RunStore.holdAccount / releaseAccount): one item per
 * account, `ACCOUNT#<account>`, naming the run that holds it. Taking and
 * letting go are each one conditional write.
 */

/** Take the account for `runId` (or answer who holds it): one conditional PutItem. */
export async function holdAccount(
  t: HoldTable,
  account: string,
  runId: string,
  options: { replacing?: string } = {},
): Promise<string> {
  const replacing = options.replacing ?? runId;
  try {
    await t.client.send(
      new PutItemCommand({
        TableName: t.table,
        Item: { ...accountKey(account), runId: S(runId), since: S(t.clock.now()) },
        ConditionExpression:
          'attribute_not_exists(pk) OR attribute_not_exists(runId) OR runId = :me OR runId = :replacing',
        ExpressionAttributeValues: { ':me': S(runId), ':replacing': S(replacing) },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return runId;
  } catch (error) {
    if (errorName(error) !== 'ConditionalCheckFailedException') throw error;
    const holder = (error as { Item?: Item }).Item?.runId?.S;
    if (holder !== undefined) return holder;
    // The old item did not come back (an emulator): read who holds it.
    const { Item } = await t.client.send(
      new GetItemCommand({ TableName: t.table, Key: accountKey(account), ConsistentRead: true }),
    );
    return Item?.runId?.S ?? holdAccount(t, account, runId, options);
  }
}

/** An UpdateItem, not a DeleteItem: the on-prem relay releases holds, and its role may not delete items. */
export async function releaseAccount(t: RunTable, account: string, runId: string): Promise<void> {
  try {
    await t.client.send(
      new UpdateItemCommand({
        TableName: t.table,
        Key: accountKey(account),
        UpdateExpression: 'REMOVE runId',
        ConditionExpression: 'runId = :me',
        ExpressionAttributeValues: { ':me': S(runId) },
      }),
    );
  } catch (error) {
    if (errorName(error) !== 'ConditionalCheckFailedException') throw error;
  }
}
