import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CancelWatch } from '../../../runners/relay/cancel-watch.ts';
import { LogShipper } from '../../../runners/relay/log-shipper.ts';
import { taskOutcome, watchTask } from '../../../runners/relay/task-watch.ts';
import { openDatabase, type SqliteDatabase } from '../../../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../../../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../../../shared/adapters/sqlite/run-store.ts';
import { requestCancel } from '../../../shared/domain/run.ts';
import type { ExecutionResult, RunningExecution } from '../../../shared/ports/executor.ts';
import { createQueuedRun, ManualClock, markLaunched, silentLogger } from '../app/harness.ts';

describe('taskOutcome', () => {
  it('puts why the relay stopped the task before what the task says', () => {
    expect(taskOutcome({ exitCode: 0 }, 'cancelled', undefined, 60)).toEqual([
      'cancelled',
      'Cancelled while running; the task was stopped',
    ]);
    expect(taskOutcome({ signal: 'SIGTERM' }, 'timed_out', 'fatal: x', 60)).toEqual([
      'timed_out',
      'Still running after its 60 s timeout; stopped',
    ]);
  });

  it("reads the task's end: success, a lost task, an exit code or a signal with the last problem line", () => {
    expect(taskOutcome({ exitCode: 0 }, undefined, 'fatal: ignored', 60)).toEqual(['succeeded', undefined]);
    expect(taskOutcome({ lost: 'gone without a record' }, undefined, undefined, 60)).toEqual([
      'failed',
      'gone without a record',
    ]);
    expect(taskOutcome({ exitCode: 2 }, undefined, 'fatal: [web-1]: UNREACHABLE!', 60)).toEqual([
      'failed',
      'The task exited with code 2: fatal: [web-1]: UNREACHABLE!',
    ]);
    expect(taskOutcome({ signal: 'SIGKILL' }, undefined, undefined, 60)).toEqual([
      'failed',
      'The task was killed by SIGKILL',
    ]);
  });
});

/** A task that ends when the test says so, or when it is killed (with SIGTERM). */
interface ControlledExecution extends RunningExecution {
  end(result: ExecutionResult): void;
  killedWith: number | undefined;
}

function controlledExecution(): ControlledExecution {
  let end: (result: ExecutionResult) => void = () => {};
  const done = new Promise<ExecutionResult>((resolve) => {
    end = resolve;
  });
  const execution: ControlledExecution = {
    handle: 'h-1',
    done,
    end: (result: ExecutionResult) => end(result),
    killedWith: undefined,
    kill: async (graceMs: number) => {
      execution.killedWith = graceMs;
      end({ signal: 'SIGTERM' });
    },
  };
  return execution;
}

describe('watchTask', () => {
  let dir: string;
  let db: SqliteDatabase;
  let store: SqliteRunStore;
  let logs: SqliteLogStore;
  let clock: ManualClock;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rw-watch-'));
    db = openDatabase(join(dir, 'rw.db'));
    store = new SqliteRunStore({ db });
    logs = new SqliteLogStore({ db });
    clock = new ManualClock(new Date().toISOString());
  });
  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const watch = async (id: string, execution: RunningExecution) => {
    const run = await markLaunched(
      store,
      clock,
      await createQueuedRun(store, clock, { id, timeoutSeconds: 60 }),
    );
    const shipper = new LogShipper(logs, id);
    const options = { clock, logger: silentLogger(), killGraceMs: 75 };
    const end = watchTask(options, run, execution, shipper, new CancelWatch(store, 10, silentLogger()));
    return { run, end, shipper };
  };
  const systemLines = async (id: string) =>
    (await logs.read(id, { limit: 100 })).lines.filter((l) => l.stream === 'system').map((l) => l.text);

  it('answers how the task ended when it ends by itself', async () => {
    const execution = controlledExecution();
    const { end } = await watch('run-1', execution);

    execution.end({ exitCode: 3 });

    expect(await end).toEqual({ state: 'failed', reason: 'The task exited with code 3', exitCode: 3 });
    expect(execution.killedWith).toBeUndefined();
  });

  it('stops the task with the grace once the run asks to be cancelled', async () => {
    const execution = controlledExecution();
    const { run, end, shipper } = await watch('run-2', execution);

    await store.updateRun(requestCancel(run, clock.now()), run.version);
    const result = await end;
    await shipper.close();

    expect(result).toEqual({
      state: 'cancelled',
      reason: 'Cancelled while running; the task was stopped',
      exitCode: undefined,
    });
    expect(execution.killedWith).toBe(75);
    expect(await systemLines('run-2')).toEqual(['remote-worker: cancel requested; stopping the task']);
  });

  it("stops the task at the run's deadline", async () => {
    const execution = controlledExecution();
    const run = await markLaunched(
      store,
      clock,
      await createQueuedRun(store, clock, { id: 'run-3', timeoutSeconds: 60 }),
    );
    clock.advance(61_000);
    const shipper = new LogShipper(logs, 'run-3');

    const result = await watchTask(
      { clock, logger: silentLogger() },
      run,
      execution,
      shipper,
      new CancelWatch(store, 1000, silentLogger()),
    );
    await shipper.close();

    expect(result.state).toBe('timed_out');
    expect(execution.killedWith).toBe(10_000);
    expect(await systemLines('run-3')).toEqual(['remote-worker: timed out; stopping the task']);
  });
});
