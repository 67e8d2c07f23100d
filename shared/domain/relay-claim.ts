import { amend, isRelayOwner, type Run, transition } from './run.ts';

/**
 * Whether a relay may take this run: handed to the relay (`local` launch
 * intent) and not taken by a relay yet. `dispatching` counts: the dispatcher
 * records `launched` only after its send, so the message can arrive first;
 * nothing waits for that write (the dispatcher's `launched` write only
 * applies to a run still `dispatching`, so it never overwrites the claim).
 */
export function relayClaimable(run: Run): boolean {
  if (run.launch?.backend !== 'local' || isRelayOwner(run.owner)) return false;
  return run.state === 'dispatching' || run.state === 'launched';
}

/**
 * Whether the stored run is exactly the one a relay message was sent for:
 * the launch intent at `sentVersion` (`dispatching`), or the dispatcher's
 * `launched` write right on top of it. Any other write since (a cancel
 * flag, a redelivered dispatch, another relay's claim) moved the version,
 * and the claim falls back to reading what happened.
 */
export const isSentRecord = (run: Pick<Run, 'state' | 'version'>, sentVersion: number): boolean =>
  (run.state === 'dispatching' && run.version === sentVersion) ||
  (run.state === 'launched' && run.version === sentVersion + 1);

/**
 * The version a relay claim of the record sent at `sentVersion` leaves: two
 * above it in either case, so a second claim of the same message can never
 * match {@link isSentRecord} again.
 */
export const claimedVersion = (sentVersion: number): number => sentVersion + 2;

/**
 * The run once relay `owner` has claimed it: `launched`, owned by the relay.
 * `version` pins the result (a claim of a sent record); by default the
 * version goes up by one, as for any write.
 *
 * @example
 * const claimed = claimForRelay(run, 'relay:dc1', clock.now(), claimedVersion(message.version));
 */
export function claimForRelay(run: Run, owner: string, at: string, version?: number): Run {
  const launched = run.state === 'dispatching' ? transition(run, 'launched', at) : run;
  const claimed = amend(launched, at, { owner });
  return { ...claimed, version: version ?? run.version + 1 };
}
