import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { QueuePump } from '../../../bin/local-mode/queue-pump.ts';
import { makeDispatchRuns } from '../../../functions/dispatcher/dispatch-runs.ts';
import { makeSettleDeadLetters } from '../../../functions/dispatcher/settle-dead-letters.ts';
import { LocalAssetStore } from '../../../shared/adapters/local/asset-store.ts';
import { openDatabase, type SqliteDatabase } from '../../../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../../../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../../shared/adapters/sqlite/target-store.ts';
import { SqliteWorkQueue } from '../../../shared/adapters/sqlite/work-queue.ts';
import type { AppDeps } from '../../../shared/app/deps.ts';
import { loadSettings } from '../../../shared/config/settings.ts';
import { LauncherUnavailableError } from '../../../shared/domain/errors.ts';
import { encodeRunMessage } from '../../../shared/domain/run-message.ts';
import { systemClock } from '../../../shared/ports/clock.ts';
import { createQueuedRun, PLAYBOOKS_ROOT, RecordingLauncher, silentLogger, vmTarget } from './harness.ts';

/**
 * The dispatch queue as local mode wires it: a real SQLite queue with a
 * redrive policy, drained by QueuePumps as Lambda's event source mapping
 * would. Visibility is 1 s so a failed message comes back quickly; the
 * waits allow a loaded 2-core machine many times that.
 */
describe('dispatch dead-letter queue', () => {
  const MAX_RECEIVES = 2;
  let db: SqliteDatabase;
  let store: SqliteRunStore;
  let targets: SqliteTargetStore;
  let queue: SqliteWorkQueue;
  let dlq: SqliteWorkQueue;
  let launcher: RecordingLauncher;
  let deps: AppDeps;
  let pumps: QueuePump[];

  beforeEach(async () => {
    db = openDatabase(':memory:');
    store = new SqliteRunStore({ db });
    targets = new SqliteTargetStore({ db });
    dlq = new SqliteWorkQueue({ db, name: 'dispatch-dlq', visibilityTimeoutSeconds: 5 });
    queue = new SqliteWorkQueue({
      db,
      name: 'dispatch',
      visibilityTimeoutSeconds: 1,
      maxReceiveCount: MAX_RECEIVES,
      deadLetter: dlq,
    });
    launcher = new RecordingLauncher('local');
    deps = {
      store,
      targets,
      dispatchQueue: queue,
      logs: new SqliteLogStore({ db }),
      assets: new LocalAssetStore({ root: PLAYBOOKS_ROOT }),
      // The handler reads the redrive limit from the settings, as the queue is configured from them.
      settings: loadSettings({ env: { DISPATCH_MAX_RECEIVE_COUNT: String(MAX_RECEIVES) } }),
      launchers: { local: launcher },
      relay: { available: true },
      clock: systemClock,
      newId: () => 'unused',
      logger: silentLogger(),
    };
    await targets.putTarget(vmTarget('vm-1'));
    pumps = [
      new QueuePump(queue, makeDispatchRuns({ ...deps, ownerId: 'dispatcher' }), deps.logger, {
        waitSeconds: 1,
      }),
      new QueuePump(dlq, makeSettleDeadLetters(deps), deps.logger, { waitSeconds: 1 }),
    ];
  });

  afterEach(async () => {
    await Promise.all(pumps.map((p) => p.stop()));
    db.close();
  });

  it('fails a run whose dispatch keeps failing retryably, with the dead-letter reason, after the redrive limit', async () => {
    const run = await createQueuedRun(store, systemClock, { id: 'run-1' });
    launcher.failuresFor.set(
      'run-1',
      Array.from({ length: 100 }, () => new LauncherUnavailableError('ECS is unreachable')),
    );
    await queue.send(encodeRunMessage(run.id));

    for (const pump of pumps) pump.start();

    await vi.waitFor(async () => expect((await store.getRun(run.id))?.state).toBe('failed'), {
      timeout: 15_000,
      interval: 50,
    });
    expect(await store.getRun(run.id)).toMatchObject({
      state: 'failed',
      attempt: 1,
      reason:
        'Delivery failed 2 times in a row; the message was moved to the dead-letter queue (see the service log for each error)',
    });
    expect(launcher.launches.map((l) => l.key)).toEqual(['run-1#1', 'run-1#1']);
    await vi.waitFor(() => expect(dlq.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 }), {
      timeout: 5_000,
    });
    expect(queue.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('launches a run whose dispatch recovers before the redrive limit', async () => {
    const run = await createQueuedRun(store, systemClock, { id: 'run-1' });
    launcher.failuresFor.set('run-1', [new LauncherUnavailableError('ECS is unreachable')]);
    await queue.send(encodeRunMessage(run.id));

    for (const pump of pumps) pump.start();

    await vi.waitFor(async () => expect((await store.getRun(run.id))?.state).toBe('launched'), {
      timeout: 15_000,
      interval: 50,
    });
    await vi.waitFor(() => expect(queue.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 }), {
      timeout: 5_000,
    });
    expect(launcher.launches).toHaveLength(2);
    expect(dlq.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    expect((await store.getRun(run.id))?.state).toBe('launched');
  });
});
