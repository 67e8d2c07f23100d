/**
 * Launch budgets (issue 16 item 2): a burst of runs on one backend at the
 * default ECS budget (20/s, burst 100) drains at the budget's pace, each run
 * launched once. In process, on local mode's SQLite store and queue, with a
 * no-op launcher standing in for ECS, so the figure is the gate's and the
 * queue's own cost, not a cloud's.
 *
 *   npm run bench:launch-budget              # 500 runs (BENCH_BUDGET_RUNS)
 *
 * Floor, from the same budget: the first `burst` launches go at once, the rest
 * at `perSecond`, so no schedule drains faster than (runs − burst) / perSecond.
 * Launches per run have the floor 1. Prints figures; asserts nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { LocalAssetStore } from '../shared/adapters/local/asset-store.ts';
import { InProcessLaunchBudgets } from '../shared/adapters/local/launch-budget.ts';
import { openDatabase } from '../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../shared/adapters/sqlite/target-store.ts';
import { SqliteWorkQueue } from '../shared/adapters/sqlite/work-queue.ts';
import type { AppDeps } from '../shared/app/deps.ts';
import { dispatchRun } from '../shared/app/dispatch.ts';
import { submitRun } from '../shared/app/runs.ts';
import { buildLaunchGate } from '../shared/composition/launch-budget.ts';
import { loadSettings } from '../shared/config/settings.ts';
import { decodeRunMessage } from '../shared/domain/run-message.ts';
import { newId } from '../shared/lib/ids.ts';
import { systemClock } from '../shared/ports/clock.ts';
import type { Launcher } from '../shared/ports/launcher.ts';
import { reportFigure } from './support/figures.ts';

const RUNS = Number(process.env.BENCH_BUDGET_RUNS ?? 500);
const DISPATCHERS = 4;

const dir = mkdtempSync(join(tmpdir(), 'rw-budget-bench-'));
const db = openDatabase(join(dir, 'bench.sqlite'));
const clock = systemClock;
const settings = loadSettings({ env: {} });
const launches = new Map<string, number>();
/** Stands in for ECS as the `local` runner (an ECS run would need an object store for its asset). */
const ecs: Launcher = {
  backend: 'local',
  async launch({ run }) {
    launches.set(run.id, (launches.get(run.id) ?? 0) + 1);
    return `noop:${run.id}`;
  },
  status: async () => ({ state: 'running' }),
  logs: async () => ({ lines: [], nextCursor: '' }),
  cancel: async () => {},
  cleanup: async () => {},
};
const defaults = buildLaunchGate(settings, { account: '123456789012', region: 'eu-west-1' });
const budget = defaults.scopes.ecs?.budget;
if (budget === undefined) throw new Error('no ECS budget in the default settings');
// The default ECS budget, on the stand-in's runner.
const gate = { store: new InProcessLaunchBudgets(), scopes: { local: { key: 'ecs#bench', budget } } };
const deps: AppDeps = {
  store: new SqliteRunStore({ db, clock }),
  targets: new SqliteTargetStore({ db }),
  dispatchQueue: new SqliteWorkQueue({ db, name: 'dispatch', visibilityTimeoutSeconds: 30, clock }),
  logs: new SqliteLogStore({ db, clock }),
  assets: new LocalAssetStore({ root: join(import.meta.dirname, '../examples/playbooks') }),
  settings,
  launchers: { local: ecs },
  relay: { available: true },
  clock,
  newId: () => newId(clock.nowMs()),
  logger: new Logger({ serviceName: 'bench', logLevel: 'SILENT' }),
  launchBudget: gate,
};

await deps.targets.putTarget({
  id: 'win-aws',
  kind: 'vm',
  cloud: 'local',
  name: 'win-aws',
  address: '10.1.2.3',
  connection: 'winrm',
  createdAt: clock.now(),
  updatedAt: clock.now(),
});
for (let i = 0; i < RUNS; i++) {
  const { run } = await submitRun(
    deps,
    { kind: 'vm', targetId: 'win-aws', asset: 'hello/site.yml', extraVars: {}, secrets: [] },
    'bench',
  );
  if (run.state !== 'queued') throw new Error(`bench: the run was ${run.state}: ${run.reason}`);
}

const started = performance.now();
let waits = 0;
await Promise.all(
  Array.from({ length: DISPATCHERS }, async (_, n) => {
    while (launches.size < RUNS) {
      const batch = await deps.dispatchQueue.receive({ max: 10 });
      if (batch.length === 0) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      for (const m of batch) {
        const runId = decodeRunMessage(m.body)?.runId ?? '';
        const outcome = await dispatchRun(deps, runId, `bench-${n}:${m.id}`);
        if (outcome === 'deferred') waits += 1;
        await deps.dispatchQueue.delete(m.receiptHandle);
      }
    }
  }),
);
const drainS = (performance.now() - started) / 1000;
const perRun = [...launches.values()].reduce((a, b) => a + b, 0) / RUNS;
const floorS = Math.max(0, RUNS - budget.burst) / budget.perSecond;

reportFigure({
  figure: `launch budget: ${RUNS}-run ECS burst at the default budget, time to drain`,
  now: drainS,
  floor: floorS,
  unit: 's',
  goal: '≤ 1.3×',
  note: `budget ${budget.perSecond}/s burst ${budget.burst}: floor (runs − burst) / rate; ${waits} waits (delayed messages), ${DISPATCHERS} dispatchers, SQLite queue, no-op launcher`,
});
reportFigure({
  figure: 'launch budget: launches per run in that burst',
  now: perRun,
  floor: 1,
  unit: 'launches',
  goal: '= 1',
  note: `${launches.size} runs launched`,
});
db.close();
rmSync(dir, { recursive: true, force: true });
