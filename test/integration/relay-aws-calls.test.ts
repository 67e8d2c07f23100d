import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallCounter } from '../../bench/support/call-counter.ts';
import { relayRig } from '../../bench/support/relay-rig.ts';
import { encodeRunMessage } from '../../shared/domain/run-message.ts';
import { useMoto } from '../support/moto.ts';

/*
 * The AWS calls the relay makes per run, counted with SDK middleware on its
 * DynamoDB and SQS clients against moto 5.2.1 (the counts do not depend on
 * where moto differs from AWS). The dispatcher's send and `launched` write
 * are made outside the counted phases, so each phase holds the relay's own
 * calls only. Timings are never asserted (bench/relay-latency.ts reports them).
 */

const moto = useMoto();
const counter = new CallCounter();
let rig: Awaited<ReturnType<typeof relayRig>>;

const until = async (check: () => Promise<boolean> | boolean, what = 'the check') => {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};
/**
 * The phase's calls without the relay's long polls and output writes: when
 * the next poll goes out and how many chunks the output ships in depend on
 * timing (output is counted as `DynamoDB(logs)`).
 */
const withoutPolls = (calls: Map<string, number>) =>
  Object.fromEntries(
    [...calls].filter(([op]) => op !== 'SQS.ReceiveMessage' && !op.startsWith('DynamoDB(logs)')).sort(),
  );
const outputWrites = (calls: Map<string, number>) =>
  [...calls].filter(([op]) => op.startsWith('DynamoDB(logs)')).reduce((n, [, c]) => n + c, 0);

beforeAll(async () => {
  rig = await relayRig(moto().clientConfig(), counter, 1);
  await rig.agent.start();
});
afterAll(async () => rig?.close());

describe('relay AWS calls per run (moto)', () => {
  it('claims with one UpdateItem and reads nothing before the task starts; settles in four more', async () => {
    const run = await rig.intent('run-1');
    const open = rig.holdStarts();
    const handle = await rig.send(run);

    const beforeStart = await counter.measure(() => until(() => rig.started.has('run-1')));
    await rig.launched(run, handle); // the dispatcher's write, after the claim: it changes nothing
    const toEnd = await counter.measure(async () => {
      open();
      await until(async () => (await rig.stateOf('run-1')) === 'succeeded');
      await until(() => rig.queueEmpty(), 'the relay queue to empty');
      // moto can report the queue empty before the SDK hands the relay its DeleteMessage answer,
      // which is when the counter records the call: wait for the record, or the window closes early.
      await until(() => counter.seen('SQS.DeleteMessage') > 0, "the relay's DeleteMessage");
    });

    expect(withoutPolls(beforeStart)).toEqual({ 'DynamoDB.UpdateItem': 1 });
    expect(withoutPolls(toEnd)).toEqual({
      'DynamoDB.GetItem': 1, // the settle's read (endRun)
      'DynamoDB.PutItem': 2, // running, then succeeded
      'SQS.DeleteMessage': 1,
    });
    expect(outputWrites(beforeStart)).toBe(0);
    expect(outputWrites(toEnd)).toBeGreaterThan(0); // a sequence reservation and a put per flush
  });

  it('starts a run from a message in the old shape (run id only) through a read of the run and of its target', async () => {
    const run = await rig.intent('run-2');
    await rig.launched(run, 'relay:relay');
    const open = rig.holdStarts();

    const beforeStart = await counter.measure(async () => {
      await rig.queue.send(encodeRunMessage('run-2'));
      await until(() => rig.started.has('run-2'));
    });
    open();
    await until(async () => (await rig.stateOf('run-2')) === 'succeeded');

    // The send is the test's; the relay reads the run, claims it (a PutItem from what it read),
    // and reads the target (the old message carries none).
    expect(withoutPolls(beforeStart)).toEqual({
      'DynamoDB.GetItem': 2,
      'DynamoDB.PutItem': 1,
      'SQS.SendMessage': 1,
    });
  });
});
