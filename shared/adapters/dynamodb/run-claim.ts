import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { Run } from '../../domain/run.ts';
import type { RunClaim } from '../../ports/run-store.ts';
import { CLAIM_AT, CLAIM_OWNER } from './claim-overlay.ts';
import { errorName, type Item, N, type RunTable, runKey, runOf, S } from './items.ts';

/**
 * RunStore.claimRun on DynamoDB: one UpdateItem, conditional on `state =
 * queued`, that sets the state, bumps the version and records the claim
 * (owner, time) beside the body; ALL_NEW answers the claimed run, and a lost
 * condition answers the stored run (ALL_OLD) without a second call. An SDK
 * retry of a claim that had gone through finds its own owner and time and
 * counts as claimed.
 *
 * @example
 * const got = await claimRun({ client, table }, runId, { owner: 'dispatcher:1', at: clock.now() });
 * if (got?.claimed) launch(got.run);
 */
export async function claimRun(
  t: RunTable,
  id: string,
  claim: RunClaim,
): Promise<{ run: Run; claimed: boolean } | undefined> {
  try {
    const { Attributes } = await t.client.send(
      new UpdateItemCommand({
        TableName: t.table,
        Key: runKey(id),
        UpdateExpression: `SET #state = :dispatching, #version = #version + :one, #owner = :owner, #at = :at`,
        ConditionExpression: '#state = :queued',
        ExpressionAttributeNames: {
          '#state': 'state',
          '#version': 'version',
          '#owner': CLAIM_OWNER,
          '#at': CLAIM_AT,
        },
        ExpressionAttributeValues: {
          ':dispatching': S('dispatching'),
          ':queued': S('queued'),
          ':one': N(1),
          ':owner': S(claim.owner),
          ':at': S(claim.at),
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    if (Attributes === undefined) return undefined;
    return { run: runOf(Attributes), claimed: true };
  } catch (error) {
    if (errorName(error) !== 'ConditionalCheckFailedException') throw error;
    const old = (error as { Item?: Item }).Item;
    if (old === undefined) return undefined;
    const ours = old[CLAIM_OWNER]?.S === claim.owner && old[CLAIM_AT]?.S === claim.at;
    return { run: runOf(old), claimed: ours };
  }
}
