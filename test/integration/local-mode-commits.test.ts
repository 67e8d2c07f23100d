import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noopExecutor } from '../../bench/support/noop-executor.ts';
import { type LocalMode, startLocalMode } from '../../bin/local-mode/local-mode.ts';
import { openDatabase } from '../../shared/adapters/sqlite/database.ts';
import { SqliteRunStore } from '../../shared/adapters/sqlite/run-store.ts';
import { SqliteWorkQueue } from '../../shared/adapters/sqlite/work-queue.ts';
import { newRun, requestCancel, transition } from '../../shared/domain/run.ts';
import { type CommitCounter, commitCounter } from '../support/commit-counter.ts';

const REPO = resolve(import.meta.dirname, '../..');

/* WAL fsyncs counted as they begin: node:fs's fdatasync is wrapped (and still called), as in sqlite-group-commit.test.ts. */
const fs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');
const realFdatasync = fs.fdatasync;
let fsyncs = 0;
beforeAll(() => {
  fs.fdatasync = ((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    fsyncs += 1;
    realFdatasync(fd, callback);
  }) as typeof fs.fdatasync;
  syncBuiltinESMExports();
});
afterAll(() => {
  fs.fdatasync = realFdatasync;
  syncBuiltinESMExports();
});
const TARGET = { kind: 'vm', cloud: 'local', name: 'localhost', address: '127.0.0.1', connection: 'local' };

/**
 * Commits and durable commits (WAL fsyncs) per local run, counted from the
 * database's statement trace: the writes of one turn of the event loop share
 * one commit (the write batch), so the submit's commit holds the run, its
 * message, the dispatcher's steps and the relay's claim, and no commit of
 * queue leases (receives) or acknowledgements alone is fsynced.
 */
describe('local mode: durable SQLite commits per run', () => {
  let local: LocalMode;
  let counter: CommitCounter;
  let dataDir: string;
  const startedAt = new Map<string, number>();
  const fsyncsAtStart = new Map<string, number>();
  const unsyncedAtStart = new Map<string, number>();
  const headers = { authorization: 'Bearer commits', 'content-type': 'application/json' };

  beforeAll(async () => {
    counter = commitCounter();
    dataDir = mkdtempSync(join(tmpdir(), 'rw-commits-'));
    const executor = noopExecutor((runId) => {
      startedAt.set(runId, counter.counts().durable);
      unsyncedAtStart.set(runId, counter.counts().unsynced);
      fsyncsAtStart.set(runId, fsyncs);
    });
    local = await startLocalMode({
      cwd: REPO,
      executor,
      reconcileEverySeconds: 3600,
      traceSql: counter.trace,
      env: { PORT: '0', REMOTE_WORKER_DATA_DIR: dataDir, REMOTE_WORKER_TOKEN: 'commits', LOG_LEVEL: 'ERROR' },
    });
    const put = await fetch(`${local.url}/targets/localhost`, {
      method: 'PUT',
      headers,
      body: JSON.stringify(TARGET),
    });
    expect(put.status).toBe(201);
  });
  afterAll(async () => {
    await local?.close({ drainMs: 1000 });
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  async function submitOne(): Promise<{
    id: string;
    submitCommits: readonly (readonly string[])[];
    before: number;
    unsyncedBefore: number;
  }> {
    const before = counter.counts().durable;
    const unsyncedBefore = counter.counts().unsynced;
    const res = await fetch(`${local.url}/runs`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ kind: 'vm', targetId: 'localhost', asset: 'hello/site.yml' }),
    });
    const answered = counter.durableCommits().length;
    const body = (await res.json()) as { id: string; state: string };
    expect(res.status).toBe(202);
    expect(body.state).toBe('queued');
    return {
      id: body.id,
      submitCommits: counter.durableCommits().slice(before, answered),
      before,
      unsyncedBefore,
    };
  }

  /** A commit's writes from the run's own on: an earlier run's last acknowledgement may share its turn. */
  const fromTheRun = (writes: readonly string[] | undefined): readonly string[] =>
    writes === undefined ? [] : writes.slice(Math.max(0, writes.indexOf('INSERT INTO runs')));

  async function waitStarted(id: string): Promise<number> {
    for (let i = 0; i < 2000 && !startedAt.has(id); i++) await new Promise((r) => setTimeout(r, 5));
    const at = startedAt.get(id);
    if (at === undefined) throw new Error(`run ${id} never reached the executor`);
    return at;
  }

  it('records a run and its dispatch message in one durable commit, before the 202', async () => {
    const { id, submitCommits } = await submitOne();
    await waitStarted(id);

    // The dispatcher is woken by these writes at once: what it writes in the same turn joins their commit.
    expect(fromTheRun(submitCommits[0]).slice(0, 2)).toEqual(['INSERT INTO runs', 'INSERT INTO messages']);
  });

  it('fsyncs no queue receive, visibility change or acknowledgement', async () => {
    const since = counter.durableCommits().length; // start-up's releaseInFlight writes are durable, and before this
    const { id } = await submitOne();
    await waitStarted(id);
    await new Promise((r) => setTimeout(r, 200)); // let the pumps acknowledge

    const leaseOnly = counter
      .durableCommits()
      .slice(since)
      .filter((writes) => writes.every((w) => w === 'UPDATE messages SET' || w === 'DELETE FROM messages'));
    expect(leaseOnly).toEqual([]);
    expect(counter.counts().unsynced).toBeGreaterThan(0);
  });

  it("makes one commit from the POST to the executor start, durable: the submit's, with the dispatcher's steps and the relay's claim", async () => {
    // The run and its message, the dispatcher's receive, claim and relay message, and the relay's receive and
    // claim are written in the submit's turn, in one write batch: one commit and one fsync for them all
    // (shared/adapters/sqlite/database.ts commitWithoutFsync, group-commit.ts durableWrite, durability.ts).
    // Before the write batch there were seven commits, two of them durable.
    for (let i = 0; i < 3; i++) {
      const { id, before, unsyncedBefore } = await submitOne();
      const at = await waitStarted(id);
      const commits = counter.durableCommits().slice(before, at);
      expect(commits).toHaveLength(1);
      expect(fromTheRun(commits[0]).slice(0, 7)).toEqual([
        'INSERT INTO runs',
        'INSERT INTO messages',
        'UPDATE messages SET', // the dispatcher's receive
        'UPDATE runs SET', // its claim
        'INSERT INTO messages', // the relay message
        'UPDATE messages SET', // the relay's receive
        'UPDATE runs SET', // its claim
      ]);
      expect(unsyncedAtStart.get(id)).toBe(unsyncedBefore);
      await waitSucceeded(id);
      await new Promise((r) => setTimeout(r, 50)); // and its acknowledgements, before the next run's POST
    }
  });
  it("makes one WAL fsync from the POST to the executor start: the submit's, which the relay claim shares", async () => {
    // The dispatcher and the relay are woken at once and commit in the submit's turn; the fsync begins after it.
    for (let i = 0; i < 3; i++) {
      const before = fsyncs;
      const { id } = await submitOne();
      await waitStarted(id);
      expect((fsyncsAtStart.get(id) ?? Number.NaN) - before).toBe(1);
      await waitSucceeded(id); // its terminal write's fsync, before the next run's POST
    }
  });

  async function waitSucceeded(id: string): Promise<void> {
    for (let i = 0; i < 400; i++) {
      const res = await fetch(`${local.url}/runs/${id}`, { headers });
      if (((await res.json()) as { state: string }).state === 'succeeded') return;
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error(`run ${id} did not succeed`);
  }

  it("makes two durable commits over a whole run, the submit's (with the relay claim) and the terminal write's, and at most four others", async () => {
    // Without an fsync, at most: the dispatcher's "launched" with its acknowledgement, the relay's `running`,
    // the log lines and the relay's acknowledgement, each alone when a turn of the event loop ends between them
    // (they join the submit's and the terminal write's commits when not). Before the write batch a run made
    // twelve commits, three of them durable.
    const { id, before, unsyncedBefore } = await submitOne();
    await waitStarted(id);
    await waitSucceeded(id);
    await new Promise((r) => setTimeout(r, 200)); // let the pumps acknowledge

    const durable = counter.durableCommits().slice(before);
    expect(durable).toHaveLength(2);
    expect(fromTheRun(durable[0]).slice(0, 2)).toEqual(['INSERT INTO runs', 'INSERT INTO messages']);
    expect(durable[1]).toContain('UPDATE runs SET');
    expect(counter.counts().unsynced - unsyncedBefore).toBeLessThanOrEqual(4);
  });
});

describe('SqliteRunStore.createRun with a message to enqueue', () => {
  const db = openDatabase(':memory:');
  const store = new SqliteRunStore({ db });
  const queue = new SqliteWorkQueue({ db, name: 'dispatch', visibilityTimeoutSeconds: 30 });
  afterAll(() => db.close());
  const draft = (id: string) =>
    newRun(
      { id, kind: 'vm', targetId: 't', asset: 'a.yml', requestedBy: 'p', timeoutSeconds: 60 },
      '2026-12-01T00:00:00.000Z',
    );

  it("sends the message with the run and wakes a waiting consumer only after the caller's turn", async () => {
    let received: readonly { body: string }[] | undefined;
    const waiting = queue.receive({ max: 1, waitSeconds: 5 }).then((m) => {
      received = m;
    });

    const result = await store.createRun(draft('r1'), { enqueue: { queue, body: 'r1-message' } });
    for (let i = 0; i < 20; i++) await Promise.resolve(); // the rest of a request's work: microtasks only

    expect(result).toMatchObject({ created: true, enqueued: true });
    expect(received).toBeUndefined();
    await waiting;
    expect(received?.map((m) => m.body)).toEqual(['r1-message']);
  });

  it('sends nothing for a run answered from its idempotency key', async () => {
    const key = { idempotencyKey: 'k', fingerprint: 'f' };
    await store.createRun(draft('r2'), { ...key, enqueue: { queue, body: 'r2-message' } });
    await queue.receive({ max: 10 });

    const again = await store.createRun(draft('r3'), { ...key, enqueue: { queue, body: 'r3-message' } });

    expect(again).toMatchObject({ created: false, run: { id: 'r2' } });
    expect(again.enqueued).toBeUndefined();
    expect(queue.depth()).toEqual({ visible: 0, inFlight: 2, delayed: 0 }); // r1's and r2's messages, no r3
  });

  it('leaves the message to the caller when the queue is in another database', async () => {
    const other = openDatabase(':memory:');
    const elsewhere = new SqliteWorkQueue({ db: other, name: 'dispatch', visibilityTimeoutSeconds: 30 });

    const result = await store.createRun(draft('r4'), { enqueue: { queue: elsewhere, body: 'r4-message' } });

    expect(result.enqueued).toBeUndefined();
    expect(elsewhere.depth().visible).toBe(0);
    other.close();
  });
});

describe('SqliteRunStore.updateRun durability', () => {
  const at = '2026-12-01T00:00:00.000Z';
  const queued = (id: string, runner: 'local' | 'ecs') => ({
    ...newRun({ id, kind: 'vm', targetId: 't', asset: 'a.yml', requestedBy: 'p', timeoutSeconds: 60 }, at),
    runner,
  });

  it("defers the fsync of a local run's claim, not of a cancel request or another runner's claim", async () => {
    const counter = commitCounter();
    const db = openDatabase(':memory:', { trace: counter.trace });
    const store = new SqliteRunStore({ db });
    const local = queued('local-1', 'local');
    const ecs = queued('ecs-1', 'ecs');
    await store.createRuns([local, ecs]);
    const start = counter.counts();

    const claimed = await store.updateRun(transition(local, 'dispatching', at), local.version);
    const afterClaim = counter.counts();
    await store.updateRun(requestCancel(claimed, at), claimed.version);
    const afterCancel = counter.counts();
    await store.updateRun(transition(ecs, 'dispatching', at), ecs.version);
    const afterEcs = counter.counts();
    db.close();

    expect(afterClaim).toEqual({ durable: start.durable, unsynced: start.unsynced + 1 });
    expect(afterCancel).toEqual({ durable: start.durable + 1, unsynced: start.unsynced + 1 });
    expect(afterEcs).toEqual({ durable: start.durable + 2, unsynced: start.unsynced + 1 });
  });
});

describe('SqliteRunStore.claimRun durability', () => {
  const at = '2026-12-01T00:00:00.000Z';
  const queued = (id: string, runner: 'local' | 'ecs') => ({
    ...newRun({ id, kind: 'vm', targetId: 't', asset: 'a.yml', requestedBy: 'p', timeoutSeconds: 60 }, at),
    runner,
  });
  const dir = mkdtempSync(join(tmpdir(), 'rw-claim-durability-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("defers the fsync of a local run's claim, not of another runner's; an answer without a claim writes nothing", async () => {
    const counter = commitCounter();
    const db = openDatabase(join(dir, 'claims.db'), { trace: counter.trace });
    const store = new SqliteRunStore({ db });
    await store.createRuns([queued('local-1', 'local'), queued('ecs-1', 'ecs')]);
    const claim = { owner: 'dispatcher:1', at };
    const step = async (id: string) => {
      const before = counter.counts();
      const answer = await store.claimRun(id, claim);
      await new Promise((resolve) => setImmediate(resolve)); // the batch's commit, when nothing waited for it
      const after = counter.counts();
      return {
        claimed: answer?.claimed,
        durable: after.durable - before.durable,
        unsynced: after.unsynced - before.unsynced,
      };
    };

    const steps = [await step('local-1'), await step('ecs-1'), await step('local-1'), await step('missing')];
    db.close();

    expect(steps).toEqual([
      { claimed: true, durable: 0, unsynced: 1 },
      { claimed: true, durable: 1, unsynced: 0 },
      { claimed: false, durable: 0, unsynced: 0 },
      { claimed: undefined, durable: 0, unsynced: 0 },
    ]);
  });
});
