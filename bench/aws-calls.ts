import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { RelayAgent } from '../runners/relay/agent.ts';
import { DynamoLogStore } from '../shared/adapters/dynamodb/log-store.ts';
import { RelayLauncher } from '../shared/adapters/relay/relay-launcher.ts';
import { SqsWorkQueue } from '../shared/adapters/sqs/work-queue.ts';
import type { Launcher } from '../shared/ports/launcher.ts';
import { ecsCallRig } from '../test/support/ecs-call-rig.ts';
import { startMoto } from '../test/support/moto.ts';
import { CallCounter, printCallTable, sumOf } from './support/call-counter.ts';
import { reportFigure } from './support/figures.ts';
import { noopExecutor } from './support/noop-executor.ts';
import { quantile } from './support/stats.ts';

const BURST = Number(process.env.BENCH_BURST ?? 50);
const RELAY_RUNS = Number(process.env.BENCH_RELAY_RUNS ?? 50);
const RELAY_CONCURRENCY = Number(process.env.BENCH_RELAY_CONCURRENCY ?? 10);

// ---- moto ---------------------------------------------------------------------------------------

const moto = await startMoto();

Object.assign(process.env, {
  AWS_ENDPOINT_URL: moto.endpoint,
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
  AWS_MAX_ATTEMPTS: '1',
});

// ---- the handlers on moto, with counted clients (test/support/ecs-call-rig.ts) -------------------

const counter = new CallCounter();
const measure = (work: () => Promise<void>) => counter.measure(work);
/** When the dispatcher sent each relay run (ms, performance.now()). */
const relaySent = new Map<string, number>();
let relayQueue: SqsWorkQueue | undefined;
let relayLogs: DynamoLogStore | undefined;
const rig = await ecsCallRig(
  {
    endpoint: moto.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  },
  counter,
  ({ sqs, dynamodb, table, relayQueueUrl }) => {
    relayQueue = new SqsWorkQueue({ client: sqs, queueUrl: relayQueueUrl });
    relayLogs = new DynamoLogStore({ client: dynamodb, tableName: table });
    return timedRelay(new RelayLauncher(relayQueue, relayLogs));
  },
);
const { store, targets, assets, clock, dispatchQueueUrl, receive, submitRun, dispatch } = rig;
if (relayQueue === undefined || relayLogs === undefined) throw new Error('the rig built no relay launcher');
const relayQueueOf: SqsWorkQueue = relayQueue;
const relayLogsOf: DynamoLogStore = relayLogs;
function timedRelay(relayLauncher: RelayLauncher): Launcher {
  return {
    backend: 'local',
    status: () => relayLauncher.status(),
    logs: (handle, run, cursor) => relayLauncher.logs(handle, run, cursor),
    cancel: () => relayLauncher.cancel(),
    cleanup: () => relayLauncher.cleanup(),
    async launch(request) {
      relaySent.set(request.run.id, performance.now());
      return relayLauncher.launch(request);
    },
  };
}

const one = await rig.ecsLifecycle(1);
const burst = await rig.ecsLifecycle(BURST);

printCallTable(one, burst, BURST);

/*
 * The design minimum per ECS VM run with the deployment's SSH key, submit → terminal:
 * - submit 4: read the target, HEAD the asset, write the run, send the dispatch message;
 * - dispatch 4: the claim (one conditional write returning the run and recording the intent),
 *   read the target, RunTask, the `launched` write (the SSH key rides on the shared task
 *   definition revision: no per-run task definition, DescribeSecret cached per container);
 * - status 2: one write per ECS event (RUNNING, STOPPED) — reached: each is one conditional
 *   UpdateItem with no read before it (RunStore.advanceRun, shared/adapters/dynamodb/run-advance.ts);
 * - read 1: GET /runs/{id}.
 */
const FLOOR = { submit: 4, dispatch: 4, status: 2, read: 1 };
const floor = FLOOR.submit + FLOOR.dispatch + FLOOR.status + FLOOR.read;
const perRunOf = (phases: Record<string, Map<string, number>>, n: number) =>
  Object.values(phases).reduce((sum, m) => sum + sumOf(m), 0) / n;
reportFigure({
  figure: 'AWS calls per ECS VM run with an SSH key, submit → terminal',
  now: perRunOf(burst.phases, BURST),
  floor,
  unit: 'calls',
  goal: '= 1×',
  note: `per run of a ${BURST}-run burst (a lone first run in fresh containers: ${perRunOf(one.phases, 1)}); floor = submit ${FLOOR.submit} + dispatch ${FLOOR.dispatch} + status ${FLOOR.status} + read ${FLOOR.read}, the design minimum`,
});

// ---- relay: enqueue → executor start ------------------------------------------------------------

const started = new Map<string, number>();
const noopExecutorForRelay = noopExecutor(started);
const workRoot = mkdtempSync(join(tmpdir(), 'rw-bench-relay-'));
const agent = new RelayAgent({
  id: 'bench-relay',
  store,
  targets,
  queue: relayQueueOf,
  logs: relayLogsOf,
  executor: noopExecutorForRelay,
  secrets: { get: async () => '' },
  assets,
  clock,
  logger: new Logger({ serviceName: 'relay-bench', logLevel: 'SILENT' }),
  workRoot,
  concurrency: RELAY_CONCURRENCY,
  pollWaitSeconds: 2,
});
await agent.start();

async function relayRuns(n: number, concurrent: boolean): Promise<number[]> {
  const ids: string[] = [];
  const one = async () => {
    const id = await submitRun('web-onprem');
    ids.push(id);
    const [message] = await receive(dispatchQueueUrl, 1);
    if (message !== undefined) await dispatch([message]);
    if (!concurrent) while (!started.has(id)) await sleep(1);
  };
  if (concurrent) {
    for (let i = 0; i < n; i++) {
      ids.push(await submitRun('web-onprem'));
    }
    const messages = await receive(dispatchQueueUrl, n);
    await dispatch(messages);
  } else {
    for (let i = 0; i < n; i++) await one();
  }
  const deadline = Date.now() + 60_000;
  while (ids.some((id) => !started.has(id)) && Date.now() < deadline) await sleep(2);
  return ids.flatMap((id) => {
    const sent = relaySent.get(id);
    const at = started.get(id);
    return sent === undefined || at === undefined ? [] : [at - sent];
  });
}
const sequential = await relayRuns(Math.min(20, RELAY_RUNS), false);
let burstLatency: number[] = [];
const burstStart = performance.now();
const relayCalls = await measure(async () => {
  burstLatency = await relayRuns(RELAY_RUNS, true);
});
const burstMs = performance.now() - burstStart;
const fmt = (xs: readonly number[]) =>
  `n=${xs.length}: median ${quantile(xs, 0.5).toFixed(1)} ms, p95 ${quantile(xs, 0.95).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms`;
console.log(
  `relay enqueue (RelayLauncher SendMessage) → executor start, SQS long poll + DynamoDB claim, concurrency ${RELAY_CONCURRENCY}:`,
);
console.log(`  ${'one at a time'.padEnd(24)}${fmt(sequential)}`);
console.log(`  ${`${RELAY_RUNS} dispatched at once`.padEnd(24)}${fmt(burstLatency)}`);
console.log(
  `  burst: ${(sumOf(relayCalls) / RELAY_RUNS).toFixed(1)} AWS calls per run (submit + dispatch + relay claim/run/settle, all on one moto process) in ${burstMs.toFixed(0)} ms = ${((sumOf(relayCalls) / burstMs) * 1000).toFixed(0)} calls/s`,
);

await agent.stop(5000);
rmSync(workRoot, { recursive: true, force: true });
rig.close();
await moto.stop();
