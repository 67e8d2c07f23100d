import { randomUUID } from 'node:crypto';
import { BatchGetItemCommand } from '@aws-sdk/client-dynamodb';
import { claimedVersion } from '../../domain/relay-claim.ts';
import type { Run } from '../../domain/run.ts';
import { backoffMs } from '../../lib/backoff.ts';
import { sleep } from '../../lib/sleep.ts';
import type { RelayClaimRequest, RelayClaimResult } from '../../ports/run-store.ts';
import { type Item, N, type RunTable, runKey, runOf, S, updateIf } from './items.ts';
import { RELAY_CLAIM_ATTRIBUTE } from './relay-claim-item.ts';

/**
 * The relay claim (RunStore.claimRelayRun) as one UpdateItem: the condition
 * is the record the message was sent for (`dispatching` at the sent
 * version, or `launched` one above: the dispatcher's write on top of it),
 * which is always a `local` intent the dispatcher owns, so state and version
 * alone decide. It sets the state, the version and the claim mark
 * (relay-claim-item.ts) and answers the item as written (ALL_NEW), or as
 * found when the condition failed (ALL_OLD) — no read either way.
 *
 * @example
 * const { claimed, run } = await dynamoRelayClaim(table, 'run-1', { owner: 'relay:r1', at, sentVersion: 3 });
 */
export async function dynamoRelayClaim(
  t: RunTable,
  runId: string,
  c: RelayClaimRequest,
): Promise<RelayClaimResult> {
  // The token tells this call's own write (an SDK retry after a lost response) from any other claim.
  const mark = JSON.stringify({ owner: c.owner, at: c.at, token: randomUUID() });
  const got = await updateIf(t, {
    Key: runKey(runId),
    UpdateExpression: 'SET #state = :launched, #version = :claimed, #claim = :mark',
    ConditionExpression:
      '(#state = :dispatching AND #version = :sent) OR (#state = :launched AND #version = :sentPlusOne)',
    ExpressionAttributeNames: {
      '#state': 'state',
      '#version': 'version',
      '#claim': RELAY_CLAIM_ATTRIBUTE,
    },
    ExpressionAttributeValues: {
      ':launched': S('launched'),
      ':dispatching': S('dispatching'),
      ':sent': N(c.sentVersion),
      ':sentPlusOne': N(c.sentVersion + 1),
      ':claimed': N(claimedVersion(c.sentVersion)),
      ':mark': S(mark),
    },
  });
  if (got.updated) return { claimed: true, run: runOf(got.item) };
  if (got.item === undefined) return { claimed: false, run: undefined };
  // Our own claim, retried by the SDK after a lost response: it counts as made.
  return { claimed: got.item[RELAY_CLAIM_ATTRIBUTE]?.S === mark, run: runOf(got.item) };
}

/** BatchGetItem takes at most 100 keys. */
const BATCH_GET_MAX = 100;

/**
 * Several runs in one strongly consistent BatchGetItem per 100 ids
 * (RunStore.getRuns); unprocessed keys are asked for again.
 *
 * @example
 * const runs = await dynamoGetRuns(table, ['run-1', 'run-2']);
 */
export async function dynamoGetRuns(t: RunTable, ids: readonly string[]): Promise<readonly Run[]> {
  const runs: Run[] = [];
  const unique = [...new Set(ids)];
  for (let i = 0; i < unique.length; i += BATCH_GET_MAX) {
    let keys: Item[] = unique.slice(i, i + BATCH_GET_MAX).map(runKey);
    for (let round = 0; keys.length > 0; round++) {
      if (round > 0) await sleep(backoffMs(round, { baseMs: 25, maxMs: 1000, jitter: Math.random }));
      const answer = await t.client.send(
        new BatchGetItemCommand({ RequestItems: { [t.table]: { Keys: keys, ConsistentRead: true } } }),
      );
      runs.push(...(answer.Responses?.[t.table] ?? []).map((item) => runOf(item)));
      keys = (answer.UnprocessedKeys?.[t.table]?.Keys ?? []) as Item[];
    }
  }
  return runs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
