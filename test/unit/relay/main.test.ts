import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RelayAgent } from '../../../runners/relay/agent.ts';
import { loadRelayConfig } from '../../../runners/relay/config.ts';
import { buildRelay } from '../../../runners/relay/main.ts';
import { LocalAssetStore } from '../../../shared/adapters/local/asset-store.ts';
import { openDatabase, type SqliteDatabase } from '../../../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../../../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../../shared/adapters/sqlite/target-store.ts';
import { SqliteWorkQueue } from '../../../shared/adapters/sqlite/work-queue.ts';
import { NotFoundError } from '../../../shared/domain/errors.ts';
import { isTerminal } from '../../../shared/domain/run.ts';
import { encodeRunMessage } from '../../../shared/domain/run-message.ts';
import { systemClock } from '../../../shared/ports/clock.ts';
import type { ExecutionRequest, Executor, RunningExecution } from '../../../shared/ports/executor.ts';
import { createQueuedRun, markLaunched, PLAYBOOKS_ROOT, silentLogger, vmTarget } from '../app/harness.ts';

/** Starts nothing: records the request and reports exit 0 at once. */
class InstantExecutor implements Executor {
  readonly name = 'process' as const;
  readonly started: ExecutionRequest[] = [];

  async start(request: ExecutionRequest): Promise<RunningExecution> {
    this.started.push(request);
    return {
      handle: `instant:${request.runId}`,
      done: Promise.resolve({ exitCode: 0 }),
      kill: async () => {},
    };
  }

  async adopt(handle: string): Promise<RunningExecution> {
    return { handle, done: Promise.resolve({ lost: 'not used here' }), kill: async () => {} };
  }

  async reapOrphans(): Promise<readonly string[]> {
    return [];
  }
}

describe('buildRelay', () => {
  let dir: string;
  let db: SqliteDatabase;
  let store: SqliteRunStore;
  let targets: SqliteTargetStore;
  let queue: SqliteWorkQueue;
  let executor: InstantExecutor;
  let agent: RelayAgent;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rw-relay-main-unit-'));
    db = openDatabase(':memory:');
    store = new SqliteRunStore({ db });
    targets = new SqliteTargetStore({ db });
    queue = new SqliteWorkQueue({ db, name: 'relay', visibilityTimeoutSeconds: 30 });
    executor = new InstantExecutor();
    await targets.putTarget(vmTarget('vm-1'));
    const config = loadRelayConfig({
      RELAY_ID: 'r1',
      RELAY_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/relay',
      RUNS_TABLE: 'unused',
      RELAY_ASSET_ROOT: PLAYBOOKS_ROOT,
      RELAY_WORK_DIR: join(dir, 'work'),
      RELAY_POLL_WAIT_SECONDS: '1',
      RELAY_SECRET_PREFIX: 'relay/',
    });
    const values: Record<string, string> = { 'relay/db': 'inside', 'other/db': 'outside' };
    agent = buildRelay(
      config,
      {
        store,
        targets,
        queue,
        logs: new SqliteLogStore({ db }),
        secrets: {
          get: async (name) => {
            const value = values[name];
            if (value === undefined) throw new NotFoundError(`no secret ${name}`);
            return value;
          },
        },
        assets: new LocalAssetStore({ root: PLAYBOOKS_ROOT }),
        executor,
      },
      silentLogger(),
    );
    await agent.start();
  });

  afterEach(async () => {
    await agent.stop(1000);
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const runToEnd = async (id: string, secret: string) => {
    const run = await createQueuedRun(store, systemClock, { id, secrets: [{ var: 'db_password', secret }] });
    await markLaunched(store, systemClock, run);
    await queue.send(encodeRunMessage(id));
    await vi.waitFor(async () => expect(isTerminal((await store.getRun(id))?.state ?? 'queued')).toBe(true), {
      timeout: 10_000,
      interval: 20,
    });
    return store.getRun(id);
  };

  it('resolves a secret under RELAY_SECRET_PREFIX into the task environment', async () => {
    expect(await runToEnd('run-in', 'relay/db')).toMatchObject({ state: 'succeeded' });
    expect(executor.started.map((r) => r.secretEnv)).toEqual([{ RW_SECRET_0: 'inside' }]);
  });

  it('refuses a secret outside RELAY_SECRET_PREFIX, naming it, without starting anything', async () => {
    expect(await runToEnd('run-out', 'other/db')).toMatchObject({
      state: 'failed',
      reason: 'Secret other/db (bound to db_password) could not be resolved',
    });
    expect(executor.started).toEqual([]);
  });
});
