import type { Run } from '../../domain/run.ts';
import { isRelayOwner } from '../../domain/run.ts';

/**
 * Whether a run write may commit without an fsync (database.ts
 * `commitWithoutFsync`): the steps a local-runner run takes between its
 * durable submit and the relay's claim — the dispatcher's claim and launch
 * intent (`dispatching`) and its "launched" — which nobody outside the
 * process has been told about and nothing outside it has acted on. The
 * relay's claim, the write right before its executor starts, stays durable,
 * and its fsync makes every earlier frame of the WAL durable with it (SQLite
 * recovers a WAL only up to its first missing frame, so a power cut can only
 * take a suffix of commits away). What a power cut takes is redone: the
 * dispatch message's lease went with it, so the message comes back and the
 * idempotent dispatcher resumes from whatever state survived. A kill -9
 * loses nothing either way (committed pages are in the OS cache).
 *
 * Never deferred: a run with a cancel request (a client was answered), a run
 * a relay owns, any other runner (the launch intent precedes a cloud call),
 * and every other state (terminal states, `running`).
 */
export function mayDeferFsync(run: Run): boolean {
  return (
    (run.state === 'dispatching' || run.state === 'launched') &&
    run.runner === 'local' &&
    run.cancelRequested !== true &&
    !isRelayOwner(run.owner)
  );
}
