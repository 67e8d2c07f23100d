import type { Run } from '../../domain/run.ts';
import { isRelayOwner } from '../../domain/run.ts';

/**
 * Whether a run write may commit without an fsync (database.ts
 * `commitWithoutFsync`). A power cut only ever takes a suffix of the WAL
 * away (SQLite recovers it up to its first missing frame) and every durable
 * commit fsyncs the frames before it, so a deferred write is lost only
 * together with everything after it: the run falls back to a state it was
 * durably in, one a kill -9 a moment earlier would also have left. That is
 * harmless for a write nothing outside the process has acted on:
 * - a local-runner run's steps between its durable submit and the relay's
 *   claim — the dispatcher's claim and launch intent (`dispatching`) and its
 *   "launched" —, which nobody outside the process has been told about: the
 *   dispatch message's lease went with them, so it comes back and the
 *   idempotent dispatcher resumes. The relay's claim, the write right before
 *   its executor starts, stays durable and fsyncs them with it;
 * - the relay's `running`, written after the executor started: losing it
 *   leaves the run claimed by the relay, as a crash between the executor's
 *   start and that write does, and the executor died with the machine; the
 *   run's terminal write, durable, fsyncs it with it.
 * A kill -9 loses what is committed either way (its pages are in the OS
 * cache), but not the write batch of the turn it lands in (database.ts
 * `commitWithoutFsync`): the same argument covers that loss, and a durable
 * write in that batch had not resolved yet.
 * The durable writes wait for their fsync off the event loop (group-commit.ts);
 * the argument is the same, since that fsync covers every commit before it.
 *
 * Never deferred: a run with a cancel request (a client was answered), any
 * other runner (the launch intent precedes a cloud call), and every other
 * state (terminal states above all).
 */
export function mayDeferFsync(run: Run): boolean {
  if (run.runner !== 'local' || run.cancelRequested === true) return false;
  if (run.state === 'running') return isRelayOwner(run.owner);
  return (run.state === 'dispatching' || run.state === 'launched') && !isRelayOwner(run.owner);
}
