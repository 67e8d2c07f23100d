import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { claimForRelay } from '../../domain/relay-claim.ts';
import type { Run } from '../../domain/run.ts';

/**
 * The attribute a relay claim writes on a run item (relay-claim.ts): the
 * claim is one UpdateItem, which cannot rewrite the JSON `body`, so the
 * claim's owner and time sit beside it and every read lays them over the
 * body. The next full write of the run (updateRun's PutItem) folds them
 * into the body and drops the attribute.
 */
export const RELAY_CLAIM_ATTRIBUTE = 'relayClaim';

export interface RelayClaimMark {
  readonly owner: string;
  readonly at: string;
}

/** The claim mark on an item, if it carries one. */
export function relayClaimOf(item: Record<string, AttributeValue>): RelayClaimMark | undefined {
  const text = item[RELAY_CLAIM_ATTRIBUTE]?.S;
  if (text === undefined) return undefined;
  const mark = JSON.parse(text) as Partial<RelayClaimMark>;
  return typeof mark.owner === 'string' && typeof mark.at === 'string'
    ? { owner: mark.owner, at: mark.at }
    : undefined;
}

/**
 * The run an item holds: its body, with a relay claim written since laid
 * over it (the item's `version` attribute is then ahead of the body's).
 *
 * @example
 * const run = withRelayClaim(JSON.parse(item.body.S), item);
 */
export function withRelayClaim(run: Run, item: Record<string, AttributeValue>): Run {
  const mark = relayClaimOf(item);
  const version = Number(item.version?.N);
  // A null body (no item) or a body already as new as the item: nothing to lay over.
  if (mark === undefined || run === null || !(version > run.version)) return run;
  return claimForRelay(run, mark.owner, mark.at, version);
}
