import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Run } from '../../domain/run.ts';
import { claimedRun } from '../../ports/run-store.ts';

/**
 * The attributes a dispatch claim writes beside the run's `body` (see
 * run-claim.ts). A claim is one UpdateItem, and an UpdateItem cannot edit the
 * JSON inside `body`; so the claim sets the top-level `state` and `version`
 * and these two, and every read applies them to the body ({@link withClaim}).
 * The run's next write (a PutItem of the whole run) drops them again.
 */
export const CLAIM_OWNER = 'claimOwner';
export const CLAIM_AT = 'claimAt';

/**
 * The run an item stands for: its body, with a pending claim applied. The
 * body of a claimed item is always the queued run the claim was made on (the
 * claim's condition is `state = queued`, and a PutItem removes the claim).
 *
 * @example
 * withClaim(JSON.parse(item.body.S), item); // { state: 'dispatching', owner: 'dispatcher:1', … }
 */
export function withClaim(body: Run, item: Record<string, AttributeValue>): Run {
  const owner = item[CLAIM_OWNER]?.S;
  const at = item[CLAIM_AT]?.S;
  if (owner === undefined || at === undefined || body.state !== 'queued') return body;
  // The claim's own version (body + 1), not the item's: a relay claim since moved the item's further (relay-claim-item.ts).
  return claimedRun(body, { owner, at });
}
