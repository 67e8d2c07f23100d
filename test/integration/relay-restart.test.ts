import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { workDirOf } from '../../runners/relay/task-start.ts';
import { DynamoLogStore } from '../../shared/adapters/dynamodb/log-store.ts';
import { DynamoRunStore } from '../../shared/adapters/dynamodb/run-store.ts';
import { DynamoTargetStore } from '../../shared/adapters/dynamodb/target-store.ts';
import { cancelRun } from '../../shared/app/runs.ts';
import { encodeRunMessage } from '../../shared/domain/run-message.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { pidsInGroup } from '../e2e/harness.ts';
import { createRunTable, useMoto } from '../support/moto.ts';
import { createQueuedRun, markLaunched, vmTarget } from '../unit/app/harness.ts';

/**
 * runners/relay/main.ts as a child process against moto (DynamoDB runs and
 * logs, SQS relay queue) with the real process executor and ansible-playbook:
 * a relay SIGKILLed mid-run leaves its task running (a detached process
 * group); the next start with the same RELAY_ID and work dir adopts it
 * instead of running the playbook again. Also: cancel through the API's
 * `cancelRun` stops the task. (Drain on SIGTERM: relay-main.test.ts.)
 *
 * moto: messages are not redelivered before their visibility timeout here
 * either, so the adoption tested is the one `recover()` does at start, not
 * a redelivery.
 */
const repo = resolve(import.meta.dirname, '../..');
const moto = useMoto();

const TABLE = 'runs';
const RELAY_ID = 'relay-restart';

interface RelayProcess {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<void>;
}

const alive = (relay: RelayProcess | undefined): relay is RelayProcess =>
  relay !== undefined && relay.child.exitCode === null && relay.child.signalCode === null;

/** Every live process whose environment carries `RW_RUN_ID=<runId>` (the shim, ansible and its workers). */
function processesOfRun(runId: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      const environ = readFileSync(`/proc/${name}/environ`, 'utf8').split('\0');
      if (environ.includes(`RW_RUN_ID=${runId}`)) pids.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

const readLines = (file: string): string[] =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];

describe('relay agent (standalone process): restart, cancel', () => {
  let ddb: DynamoDBClient;
  let sqs: SQSClient;
  let store: DynamoRunStore;
  let targets: DynamoTargetStore;
  let logStore: DynamoLogStore;
  let queueUrl: string;
  let workDir: string;
  let scratch: string;
  let relay: RelayProcess | undefined;

  const startRelay = async (): Promise<RelayProcess> => {
    let output = '';
    const child = spawn(process.execPath, ['--import', 'tsx', join(repo, 'runners/relay/main.ts')], {
      cwd: repo,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...moto().env(),
        RELAY_ID,
        RELAY_QUEUE_URL: queueUrl,
        RUNS_TABLE: TABLE,
        RELAY_ASSET_ROOT: 'test/fixtures/playbooks',
        RELAY_EXECUTOR: 'process',
        RELAY_WORK_DIR: workDir,
        RELAY_POLL_WAIT_SECONDS: '1',
        RELAY_DRAIN_SECONDS: '5',
        RELAY_CONCURRENCY: '2',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const started: RelayProcess = { child, output: () => output, exited };
    relay = started;
    await vi.waitFor(() => expect(output).toContain('relay started'), { timeout: 30_000, interval: 100 });
    return started;
  };

  const ensureRelay = async (): Promise<RelayProcess> => (alive(relay) ? relay : startRelay());

  /** SIGKILL the relay itself (not its tasks: they run in their own detached process groups). */
  const crashRelay = async (): Promise<void> => {
    const current = relay;
    if (!alive(current)) return;
    current.child.kill('SIGKILL');
    await current.exited;
  };

  const submit = async (id: string, asset: string, extraVars: Record<string, unknown>): Promise<void> => {
    const run = await createQueuedRun(store, systemClock, { id, targetId: 'this-host', asset, extraVars });
    await markLaunched(store, systemClock, run, { backend: 'local', handle: 'relay:relay' });
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: encodeRunMessage(id) }));
  };

  const stateOf = async (id: string) => (await store.getRun(id))?.state;

  /** The task shim's pid, which is also its process group: `relay:<id>/process:<pid>:<start time>`. */
  const taskGroupOf = async (id: string): Promise<number> => {
    const handle = (await store.getRun(id))?.launch?.handle ?? '';
    const match = new RegExp(`^relay:${RELAY_ID}/process:(\\d+):\\d+$`).exec(handle);
    expect(match, `handle ${handle}`).not.toBeNull();
    return Number(match?.[1]);
  };

  const logsOf = async (id: string): Promise<string> => {
    let text = '';
    let cursor: string | undefined;
    for (;;) {
      const page = await logStore.read(id, cursor === undefined ? {} : { cursor });
      for (const line of page.lines) text += `${line.text}\n`;
      if (page.lines.length === 0 || page.nextCursor === cursor) return text;
      cursor = page.nextCursor;
    }
  };

  beforeAll(async () => {
    ddb = new DynamoDBClient(moto().clientConfig());
    sqs = new SQSClient(moto().clientConfig());
    store = new DynamoRunStore({ tableName: TABLE, client: ddb });
    targets = new DynamoTargetStore({ tableName: TABLE, client: ddb });
    logStore = new DynamoLogStore({ tableName: TABLE, client: ddb });
    await createRunTable(ddb, TABLE);
    ({ QueueUrl: queueUrl = '' } = await sqs.send(
      new CreateQueueCommand({ QueueName: 'relay', Attributes: { VisibilityTimeout: '60' } }),
    ));
    await targets.putTarget(
      vmTarget('this-host', { cloud: 'local', address: '127.0.0.1', connection: 'local' }),
    );
    workDir = mkdtempSync(join(tmpdir(), 'rw-relay-restart-'));
    scratch = mkdtempSync(join(tmpdir(), 'rw-relay-marker-'));
    await startRelay();
  }, 60_000);

  afterAll(async () => {
    if (alive(relay)) {
      relay.child.kill('SIGKILL');
      await relay.exited;
    }
    // Tasks a failed test left behind.
    for (const id of ['run-restart', 'run-resume', 'run-crash-logs', 'run-cancel']) {
      for (const pid of processesOfRun(id)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    ddb?.destroy();
    sqs?.destroy();
    for (const dir of [workDir, scratch])
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('a relay SIGKILLed mid-run is restarted with the same id and adopts the task: it runs once and succeeds', async () => {
    await ensureRelay();
    const marker = join(scratch, 'restart.marker');
    await submit('run-restart', 'marker-slow.yml', { marker, seconds: 5 });
    await vi.waitFor(
      async () => {
        expect(await stateOf('run-restart')).toBe('running');
        expect(readLines(marker)).toEqual(['start']);
      },
      { timeout: 30_000, interval: 100 },
    );
    const pgid = await taskGroupOf('run-restart');

    await crashRelay();
    // The relay is gone; its task is not.
    expect(pidsInGroup(pgid).length).toBeGreaterThan(0);
    expect(await stateOf('run-restart')).toBe('running');

    const second = await startRelay();
    await vi.waitFor(async () => expect(await stateOf('run-restart')).toBe('succeeded'), {
      timeout: 30_000,
      interval: 250,
    });

    const run = await store.getRun('run-restart');
    expect(run).toMatchObject({ state: 'succeeded', exitCode: 0, owner: `relay:${RELAY_ID}` });
    // One claim, one start: the second relay did not run it again.
    expect(run?.history.map((h) => h.state)).toEqual([
      'queued',
      'dispatching',
      'launched',
      'running',
      'succeeded',
    ]);
    expect(readLines(marker)).toEqual(['start', 'end']);
    expect(await logsOf('run-restart')).toContain(`relay ${RELAY_ID} restarted and adopted this run`);
    expect(second.output()).not.toContain('reaped');
    expect(pidsInGroup(pgid)).toEqual([]);
    expect(processesOfRun('run-restart')).toEqual([]);
  }, 60_000);

  it('a relay that died between starting a task and recording it resumes that task on restart: the play runs once', async () => {
    await ensureRelay();
    const marker = join(scratch, 'resume.marker');
    await submit('run-resume', 'marker-slow.yml', { marker, seconds: 5 });
    await vi.waitFor(async () => expect(readLines(marker)).toEqual(['start']), {
      timeout: 30_000,
      interval: 100,
    });
    await crashRelay();
    // As if the crash had come before the `running` write: the record still says launched, as claimed.
    const recorded = await store.getRun('run-resume');
    if (recorded === undefined) throw new Error('run-resume vanished');
    await store.updateRun(
      {
        ...recorded,
        version: recorded.version + 1,
        state: 'launched',
        history: recorded.history.filter((h) => h.state !== 'running'),
        launch: {
          backend: 'local',
          intentAt: recorded.launch?.intentAt ?? recorded.createdAt,
          handle: 'relay:relay',
        },
      },
      recorded.version,
    );

    const second = await startRelay();
    // The message of the first delivery is invisible for its timeout; a redelivery arrives like this one.
    await sqs.send(
      new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: encodeRunMessage('run-resume') }),
    );
    await vi.waitFor(async () => expect(await stateOf('run-resume'), second.output()).toBe('succeeded'), {
      timeout: 30_000,
      interval: 250,
    });

    // Not reaped at start, not started again: the first task finished and was the run's.
    expect(second.output()).not.toContain('reaped');
    expect(readLines(marker)).toEqual(['start', 'end']);
    expect(await logsOf('run-resume')).toContain(
      `relay ${RELAY_ID} restarted and resumed the task it had started`,
    );
    expect(processesOfRun('run-resume')).toEqual([]);
  }, 60_000);

  it('cancel through the API (cancelRun) stops the running task and settles the run cancelled', async () => {
    await ensureRelay();
    const marker = join(scratch, 'cancel.marker');
    await submit('run-cancel', 'marker-slow.yml', { marker, seconds: 120 });
    await vi.waitFor(
      async () => {
        expect(await stateOf('run-cancel')).toBe('running');
        expect(readLines(marker)).toEqual(['start']);
      },
      { timeout: 30_000, interval: 100 },
    );
    const pgid = await taskGroupOf('run-cancel');
    expect(pidsInGroup(pgid).length).toBeGreaterThan(0);

    const flagged = await cancelRun({ store, clock: systemClock }, 'run-cancel');
    expect(flagged).toMatchObject({ state: 'running', cancelRequested: true });

    await vi.waitFor(async () => expect(await stateOf('run-cancel')).toBe('cancelled'), {
      timeout: 20_000,
      interval: 100,
    });
    expect(await store.getRun('run-cancel')).toMatchObject({
      state: 'cancelled',
      reason: 'Cancelled while running; the task was stopped',
    });
    expect(await logsOf('run-cancel')).toContain('remote-worker: cancel requested; stopping the task');
    expect(readLines(marker)).toEqual(['start']);
    expect(pidsInGroup(pgid)).toEqual([]);
    expect(processesOfRun('run-cancel')).toEqual([]);
  }, 45_000);

  it('output the crashed relay had read from the task but not yet written to the log store is not lost', async () => {
    await ensureRelay();
    const marker = join(scratch, 'crash-logs.marker');
    await submit('run-crash-logs', 'marker-slow.yml', { marker, seconds: 4 });
    await vi.waitFor(async () => expect(await stateOf('run-crash-logs')).toBe('running'), {
      timeout: 30_000,
      interval: 100,
    });
    // The process executor tails <work dir>/output.log and records how far it has
    // shipped in output.offset. Crash the relay as soon as that offset covers the
    // "Wait" task's header: the relay has handed the line to its log shipper.
    const taskDir = workDirOf(workDir, (await store.getRun('run-crash-logs')) ?? { id: '', attempt: 0 });
    const shipped = (): string => {
      try {
        const offset = Number(readFileSync(join(taskDir, 'output.offset'), 'utf8'));
        return readFileSync(join(taskDir, 'output.log')).subarray(0, offset).toString('utf8');
      } catch {
        return '';
      }
    };
    await vi.waitFor(() => expect(shipped()).toMatch(/TASK \[.*Wait\]/), { timeout: 30_000, interval: 5 });
    await crashRelay();
    const header = /TASK \[.*Wait\].*/.exec(shipped())?.[0] ?? '';

    await startRelay();
    await vi.waitFor(async () => expect(await stateOf('run-crash-logs')).toBe('succeeded'), {
      timeout: 30_000,
      interval: 250,
    });
    expect(readLines(marker)).toEqual(['start', 'end']);
    const logs = await logsOf('run-crash-logs');
    expect(logs).toContain('restarted and adopted');
    // At least once: the offset must not move past lines that never reached the store.
    expect(logs).toContain(header);
  }, 60_000);
});
