/**
 * Relay enqueue → executor start on moto, against the floor of a bare SQS
 * SendMessage → long-poll receive, both timed in the same run, samples
 * interleaved. The relay runs on its AWS adapters (DynamoDB, SQS) with a
 * no-op executor; the dispatcher's part is played by RelayLauncher.launch
 * (the send) followed by its `launched` write, as dispatchRun makes them.
 * Also prints the AWS calls of one relay run, before the task starts and in
 * all, by operation.
 *
 *   npm run bench:relay            (BENCH_RELAY_SAMPLES, default 30)
 */

import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { startMoto } from '../test/support/moto.ts';
import { CallCounter, sumOf } from './support/call-counter.ts';
import { reportFigure } from './support/figures.ts';
import { relayRig } from './support/relay-rig.ts';
import { quantile } from './support/stats.ts';

const SAMPLES = Number(process.env.BENCH_RELAY_SAMPLES ?? 30);

const moto = await startMoto();
const config = {
  endpoint: moto.endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  maxAttempts: 1,
};
const counter = new CallCounter();
const rig = await relayRig(config, counter);
await rig.agent.start();
const sender = new SQSClient(config);
const receiver = new SQSClient(config);

/** The floor: one SendMessage to a queue a long poll is already waiting on, until that receive answers. */
async function floorSample(): Promise<number> {
  const receiving = receiver.send(
    new ReceiveMessageCommand({ QueueUrl: rig.floorUrl, WaitTimeSeconds: 20, MaxNumberOfMessages: 1 }),
  );
  await sleep(30); // the long poll is waiting at moto, as the relay's is
  const t0 = performance.now();
  await sender.send(new SendMessageCommand({ QueueUrl: rig.floorUrl, MessageBody: '{"runId":"floor"}' }));
  const { Messages } = await receiving;
  const t1 = performance.now();
  const handle = Messages?.[0]?.ReceiptHandle;
  if (handle !== undefined)
    await sender.send(new DeleteMessageCommand({ QueueUrl: rig.floorUrl, ReceiptHandle: handle }));
  return t1 - t0;
}

/**
 * The design's own minimum beside the floor: the same send → long-poll receive, then the one
 * conditional claim write every relay start needs (the relay's claim, on a run item of the same
 * table, from a plain client). Context for the ratio: the bare floor leaves that write out.
 */
async function floorWithClaimSample(id: string): Promise<number> {
  const run = await rig.intent(id);
  const receiving = receiver.send(
    new ReceiveMessageCommand({ QueueUrl: rig.floorUrl, WaitTimeSeconds: 20, MaxNumberOfMessages: 1 }),
  );
  await sleep(30);
  const t0 = performance.now();
  await sender.send(new SendMessageCommand({ QueueUrl: rig.floorUrl, MessageBody: `{"runId":"${id}"}` }));
  const { Messages } = await receiving;
  const claim = await rig.floorClaim(run);
  const t1 = performance.now();
  if (!claim.claimed) throw new Error(`the floor's claim of ${id} was refused`);
  const handle = Messages?.[0]?.ReceiptHandle;
  if (handle !== undefined)
    await sender.send(new DeleteMessageCommand({ QueueUrl: rig.floorUrl, ReceiptHandle: handle }));
  return t1 - t0;
}

let n = 0;
/** Each measured run's start of the clock, to cut its path into parts (rig.moments). */
const clockStarts = new Map<string, number>();
/** One relay run: the send (and the dispatcher's launched write) until the executor is asked to start. */
async function relaySample(withTarget: boolean): Promise<number> {
  const id = `run-${String(++n).padStart(4, '0')}`;
  const run = await rig.intent(id);
  await sleep(30); // the relay's long poll is waiting, as the floor's is
  const t0 = performance.now();
  clockStarts.set(id, t0);
  await rig.handOver(run, withTarget);
  while (!rig.started.has(id)) await sleep(0.2);
  const t1 = rig.started.get(id) ?? Number.NaN;
  while ((await rig.stateOf(id)) !== 'succeeded') await sleep(2);
  // Its message deleted too, as the floor's is: the next sample must not start beside this one's tail.
  while (!(await rig.queueEmpty())) await sleep(2);
  return t1 - t0;
}

// Warm-up: first calls open connections and load moto's code paths.
for (let i = 0; i < 3; i++) {
  await floorSample();
  await relaySample(true);
}
const floor: number[] = [];
const relay: number[] = [];
const relayWithoutTarget: number[] = [];
const floorWithClaim: number[] = [];
const measured: string[] = [];
for (let i = 0; i < SAMPLES; i++) {
  floor.push(await floorSample());
  relay.push(await relaySample(true));
  measured.push(`run-${String(n).padStart(4, '0')}`);
  if (i % 3 === 0) relayWithoutTarget.push(await relaySample(false));
  floorWithClaim.push(await floorWithClaimSample(`floor-claim-${i}`));
}
/** The median of one part of the path of the measured runs (with the target), from `from` to `to`. */
const part = (from: (id: string) => number | undefined, to: (id: string) => number | undefined) =>
  quantile(
    measured.map((id) => (to(id) ?? Number.NaN) - (from(id) ?? Number.NaN)),
    0.5,
  );
const moment = (key: 'sent' | 'received' | 'claimSent' | 'claimed') => (id: string) =>
  rig.moments.get(id)?.[key];
const parts = {
  'enqueue → send answered': part((id) => clockStarts.get(id), moment('sent')),
  'enqueue → receive answered': part((id) => clockStarts.get(id), moment('received')),
  'receive answered → claim sent': part(moment('received'), moment('claimSent')),
  'claim sent → claim answered': part(moment('claimSent'), moment('claimed')),
  'claim answered → executor start': part(moment('claimed'), (id) => rig.started.get(id)),
};

// The AWS calls of one run: before its task starts (starts held open), and from the send to terminal.
const open = rig.holdStarts();
const run = await rig.intent('run-counted');
await sleep(30);
const beforeStart = await counter.measure(async () => {
  await rig.handOver(run);
  while (!rig.started.has('run-counted')) await sleep(0.2);
});
const afterStart = await counter.measure(async () => {
  open();
  while ((await rig.stateOf('run-counted')) !== 'succeeded') await sleep(2);
  await sleep(100); // the message delete after the settle
});

const med = (xs: readonly number[]) => quantile(xs, 0.5);
const show = (xs: readonly number[]) =>
  `median ${med(xs).toFixed(1)} ms, p95 ${quantile(xs, 0.95).toFixed(1)} ms (n=${xs.length})`;
console.log(`relay on moto, ${process.version}, no-op executor, samples interleaved`);
console.log(`  floor: SendMessage → long-poll receive      ${show(floor)}`);
console.log(`  floor + claim: … receive → one claim write  ${show(floorWithClaim)}`);
console.log(`  relay: enqueue → executor start             ${show(relay)}`);
console.log(
  `  relay, message without the target           ${show(relayWithoutTarget)} (dispatch not passing it)`,
);
console.log('  the relay path in parts (medians of each part; SDK middleware timestamps):');
for (const [name, ms] of Object.entries(parts)) console.log(`    ${name.padEnd(34)} ${ms.toFixed(1)} ms`);
const table = (m: Map<string, number>) =>
  [...m.entries()]
    .sort()
    .map(([op, c]) => `${op} ${c}`)
    .join(', ');
console.log(`  AWS calls of one relay run (send + dispatcher's launched write included):`);
console.log(`    send → executor start: ${sumOf(beforeStart)} (${table(beforeStart)})`);
console.log(`    start → terminal:      ${sumOf(afterStart)} (${table(afterStart)})`);

reportFigure({
  figure: 'relay enqueue → executor start (moto)',
  now: med(relay),
  floor: med(floor),
  unit: 'ms',
  goal: '≤ 2×',
  note: `medians of ${SAMPLES} interleaved samples; floor: bare SendMessage → long-poll receive on the same moto`,
});

reportFigure({
  figure: 'relay enqueue → executor start against send → receive → one claim write (moto)',
  now: med(relay),
  floor: med(floorWithClaim),
  unit: 'ms',
  goal: 'context',
  note: 'the same relay samples against the floor with the one conditional claim write the design needs before any start',
});

await rig.close();
sender.destroy();
receiver.destroy();
await moto.stop();
