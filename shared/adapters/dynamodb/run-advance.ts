import { isTerminal } from '../../domain/run.ts';
import type { RunAdvance, RunAdvanceResult } from '../../ports/run-store.ts';
import { ADVANCE_KEY, ADVANCE_ORDER, ADVANCES, advanceKeyOf, advancesOf } from './advance-overlay.ts';
import { CLAIM_OWNER } from './claim-overlay.ts';
import { N, type RunTable, runKey, runOf, S, updateIf } from './items.ts';
import { RELAY_CLAIM_ATTRIBUTE } from './relay-claim-item.ts';

/** Advances an item may carry before a full write must fold them into the body. */
const MAX_ADVANCES = 16;

/**
 * RunStore.advanceRun on DynamoDB: one UpdateItem, no read. The condition is
 * advanceApplies on the item's own attributes (advance-overlay.ts): the
 * `advanceKey` (attempt and task; only a run that may advance without a
 * read carries one), the state among `from`, the order above the item's,
 * and no pending claim. It sets the state, bumps the version, raises the
 * order and appends the advance, which every read replays over the body;
 * a terminal advance also drops the key, so nothing advances it again.
 * ALL_NEW answers the advanced run; a lost condition answers the stored run
 * (ALL_OLD) without a second call. An SDK retry of an advance that had gone
 * through finds its own advance last and counts as advanced.
 *
 * @example
 * const got = await dynamoAdvanceRun(table, runId, { attempt: 1, task, order: 3, from: ['launched'], to: 'running', at });
 * if (!got.advanced) fallBackToReadModifyWrite(got.run);
 */
export async function dynamoAdvanceRun(t: RunTable, id: string, a: RunAdvance): Promise<RunAdvanceResult> {
  const mine = JSON.stringify(a);
  const from = a.from.filter((state) => !isTerminal(state));
  if (from.length === 0) return { advanced: false, run: undefined };
  const fromNames = from.map((_, i) => `:from${i}`);
  const got = await updateIf(t, {
    Key: runKey(id),
    UpdateExpression:
      [
        'SET #state = :to, #version = #version + :one, #order = :order',
        '#advances = list_append(if_not_exists(#advances, :none), :advance)',
      ].join(', ') + (isTerminal(a.to) ? ' REMOVE #key' : ''),
    ConditionExpression: [
      '#key = :key',
      `#state IN (${fromNames.join(', ')})`,
      '(attribute_not_exists(#order) OR #order < :order)',
      '(attribute_not_exists(#advances) OR size(#advances) < :max)',
      'attribute_not_exists(#claimOwner)',
      'attribute_not_exists(#relayClaim)',
    ].join(' AND '),
    ExpressionAttributeNames: {
      '#key': ADVANCE_KEY,
      '#order': ADVANCE_ORDER,
      '#advances': ADVANCES,
      '#state': 'state',
      '#version': 'version',
      '#claimOwner': CLAIM_OWNER,
      '#relayClaim': RELAY_CLAIM_ATTRIBUTE,
    },
    ExpressionAttributeValues: {
      ':key': S(advanceKeyOf(a.attempt, a.task)),
      ':to': S(a.to),
      ':one': N(1),
      ':order': N(a.order),
      ':max': N(MAX_ADVANCES),
      ':none': { L: [] },
      ':advance': { L: [S(mine)] },
      ...Object.fromEntries(from.map((state, i) => [`:from${i}`, S(state)])),
    },
  });
  if (got.updated) return { advanced: true, run: runOf(got.item) };
  if (got.item === undefined) return { advanced: false, run: undefined };
  const run = runOf(got.item);
  return advancesOf(got.item).at(-1) === mine ? { advanced: true, run } : { advanced: false, run };
}
