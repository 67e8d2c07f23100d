import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type SqliteDatabase } from '../../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../shared/adapters/sqlite/target-store.ts';
import { SqliteWorkQueue } from '../../shared/adapters/sqlite/work-queue.ts';
import { ValidationError } from '../../shared/domain/errors.ts';
import { newRun, type Run, transition } from '../../shared/domain/run.ts';
import type { Clock } from '../../shared/ports/clock.ts';
import { LOG_PAGE_MAX_LINES } from '../../shared/ports/log-store.ts';
import { logStoreContract } from './log-store.contract.ts';
import { runAdvanceContract } from './run-advance.contract.ts';
import { runClaimContract } from './run-claim.contract.ts';
import { runStoreContract } from './run-store.contract.ts';
import { targetStoreContract } from './target-store.contract.ts';
import { workQueueContract } from './work-queue.contract.ts';

const tempRoot = mkdtempSync(join(tmpdir(), 'rw-sqlite-'));
afterAll(() => rmSync(tempRoot, { recursive: true, force: true }));

let fileCount = 0;
function tempDbPath(): string {
  fileCount += 1;
  return join(tempRoot, `db-${fileCount}.sqlite`);
}

/** Each fixture gets its own file, so a failed test cannot leak rows into the next. */
function fileDb(): SqliteDatabase {
  return openDatabase(tempDbPath());
}
const memoryDb = (): SqliteDatabase => openDatabase(':memory:');

for (const [kind, open] of [
  ['file', fileDb],
  ['memory', memoryDb],
] as const) {
  const runStore = async () => {
    const db = open();
    return { store: new SqliteRunStore({ db }), cleanup: async () => void db.close() };
  };
  runStoreContract(`sqlite (${kind})`, runStore);
  runClaimContract(`sqlite (${kind})`, runStore);
  runAdvanceContract(`sqlite (${kind})`, runStore, { repeatCountsAsAdvanced: false });
  targetStoreContract(`sqlite (${kind})`, async () => {
    const db = open();
    return { targets: new SqliteTargetStore({ db }), cleanup: async () => void db.close() };
  });
  logStoreContract(`sqlite (${kind})`, async () => {
    const db = open();
    return { store: new SqliteLogStore({ db }), cleanup: async () => void db.close() };
  });
}

// Timing-bound (tens of seconds), so only against a real file, the mode local mode uses.
workQueueContract('sqlite (file)', async ({ visibilityTimeoutSeconds, maxReceiveCount }) => {
  const db = fileDb();
  const deadLetter = new SqliteWorkQueue({ db, name: 'dispatch-dlq', visibilityTimeoutSeconds: 30 });
  const queue = new SqliteWorkQueue({
    db,
    name: 'dispatch',
    visibilityTimeoutSeconds,
    maxReceiveCount,
    deadLetter,
  });
  return { queue, deadLetter, cleanup: async () => void db.close() };
});

class FakeClock implements Clock {
  constructor(public ms = Date.UTC(2026, 0, 1)) {}
  now(): string {
    return new Date(this.ms).toISOString();
  }
  nowMs(): number {
    return this.ms;
  }
  advance(seconds: number): void {
    this.ms += seconds * 1000;
  }
}

const aRun = (id: string): Run =>
  newRun(
    { id, kind: 'vm', asset: 'site.yml', requestedBy: 'test', timeoutSeconds: 60 },
    '2026-01-01T00:00:00.000Z',
  );

describe('openDatabase', () => {
  it('uses WAL, synchronous=FULL and a busy timeout, at the latest schema version', () => {
    const db = fileDb();
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('synchronous', { simple: true })).toBe(2);
      expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
      expect(db.pragma('user_version', { simple: true })).toBe(3);
    } finally {
      db.close();
    }
  });

  it('creates the file readable by its owner only', () => {
    const path = tempDbPath();
    openDatabase(path).close();

    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('keeps data across a reopen and migrates only once', async () => {
    const path = tempDbPath();
    const first = openDatabase(path);
    await new SqliteRunStore({ db: first }).createRun(aRun('01RUN0000000000000000000A1'));
    first.close();

    const second = openDatabase(path);
    try {
      expect(await new SqliteRunStore({ db: second }).getRun('01RUN0000000000000000000A1')).toBeDefined();
    } finally {
      second.close();
    }
  });

  it('refuses a database written by a newer schema', () => {
    const path = tempDbPath();
    const raw = new Database(path);
    raw.pragma('user_version = 99');
    raw.close();

    expect(() => openDatabase(path)).toThrow(/schema version 99, newer than this build knows \(3\)/);
  });

  it('loses no accepted run when the process is killed with SIGKILL right after the write', async () => {
    const path = tempDbPath();
    const child = join(tempRoot, 'kill-child.mts'); // .mts: no package.json up here says ESM, and it awaits at top level
    const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url));
    writeFileSync(
      child,
      `import { openDatabase } from ${JSON.stringify(here('../../shared/adapters/sqlite/database.ts'))};
import { SqliteRunStore } from ${JSON.stringify(here('../../shared/adapters/sqlite/run-store.ts'))};
import { newRun } from ${JSON.stringify(here('../../shared/domain/run.ts'))};
const store = new SqliteRunStore({ db: openDatabase(process.argv[2]) });
await store.createRun(newRun({ id: '01KILL000000000000000000K1', kind: 'vm', asset: 'a.yml', requestedBy: 't', timeoutSeconds: 60 }, new Date().toISOString()));
process.kill(process.pid, 'SIGKILL');
`,
    );

    const result = spawnSync(process.execPath, ['--import', 'tsx', child, path], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      encoding: 'utf8',
      timeout: 30_000,
    });

    expect(result.stderr).not.toMatch(/Error/);
    expect(result.signal).toBe('SIGKILL');
    const db = openDatabase(path);
    try {
      expect((await new SqliteRunStore({ db }).getRun('01KILL000000000000000000K1'))?.state).toBe('queued');
    } finally {
      db.close();
    }
  });
});

describe('SqliteRunStore', () => {
  let db: SqliteDatabase;
  beforeEach(() => {
    db = memoryDb();
  });
  afterEach(() => db.close());

  it('refuses a write that does not raise the version', async () => {
    const store = new SqliteRunStore({ db });
    const { run } = await store.createRun(aRun('01RUN0000000000000000000B1'));

    await expect(store.updateRun({ ...run, state: 'dispatching' }, run.version)).rejects.toBeInstanceOf(
      ValidationError,
    );
  });

  it('answers a stale write with the stored run and writes nothing', async () => {
    const statements: string[] = [];
    const traced = openDatabase(':memory:', { trace: (sql) => statements.push(sql) });
    const store = new SqliteRunStore({ db: traced });
    const { run } = await store.createRun(aRun('01RUN0000000000000000000B2'));
    const moved = await store.updateRun(transition(run, 'dispatching', run.createdAt), run.version);
    const from = statements.length;

    const stale = store.updateRun(
      { ...transition(run, 'cancelled', run.createdAt), version: run.version + 1 },
      run.version,
    );

    await expect(stale).rejects.toMatchObject({ code: 'run_conflict', current: moved });
    expect(statements.slice(from).filter((sql) => /^UPDATE runs/.test(sql))).toEqual([]);
    expect(await store.getRun(run.id)).toEqual(moved);
    traced.close();
  });

  it('forgets an idempotency key after its time to live', async () => {
    const clock = new FakeClock();
    const store = new SqliteRunStore({ db, clock, idempotencyTtlSeconds: 60 });
    await store.createRun(aRun('01RUN0000000000000000000C1'), { idempotencyKey: 'k', fingerprint: 'f1' });

    clock.advance(61);
    const again = await store.createRun(aRun('01RUN0000000000000000000C2'), {
      idempotencyKey: 'k',
      fingerprint: 'f2',
    });

    expect(again.created).toBe(true);
    expect(again.run.id).toBe('01RUN0000000000000000000C2');
  });

  it('refuses an idempotency key without a fingerprint', async () => {
    const store = new SqliteRunStore({ db });

    await expect(
      store.createRun(aRun('01RUN0000000000000000000D1'), { idempotencyKey: 'k' }),
    ).rejects.toBeInstanceOf(ValidationError);
  });

  it('refuses page limits outside 1..100 and a non-positive active limit', async () => {
    const store = new SqliteRunStore({ db });

    await expect(store.listRuns({ limit: 0 })).rejects.toBeInstanceOf(ValidationError);
    await expect(store.listRuns({ limit: 101 })).rejects.toBeInstanceOf(ValidationError);
    await expect(store.listActiveRuns(-1)).rejects.toBeInstanceOf(ValidationError);
  });

  it('sees a write made through another connection to the same file', async () => {
    const path = tempDbPath();
    const a = openDatabase(path);
    const b = openDatabase(path);
    try {
      const storeA = new SqliteRunStore({ db: a });
      const storeB = new SqliteRunStore({ db: b });
      const { run } = await storeA.createRun(aRun('01RUN0000000000000000000E1'));
      await storeB.updateRun(transition(run, 'dispatching', run.createdAt), run.version);

      await expect(
        storeA.updateRun(transition(run, 'cancelled', run.createdAt), run.version),
      ).rejects.toThrow(/expected version 1, found version 2/);
    } finally {
      a.close();
      b.close();
    }
  });
});

describe('SqliteWorkQueue', () => {
  let db: SqliteDatabase;
  let clock: FakeClock;
  beforeEach(() => {
    db = memoryDb();
    clock = new FakeClock();
  });
  afterEach(() => db.close());

  const make = (options: { maxReceiveCount?: number } = {}) => {
    const deadLetter = new SqliteWorkQueue({ db, name: 'dlq', visibilityTimeoutSeconds: 30, clock });
    const queue =
      options.maxReceiveCount === undefined
        ? new SqliteWorkQueue({ db, name: 'q', visibilityTimeoutSeconds: 30, clock })
        : new SqliteWorkQueue({
            db,
            name: 'q',
            visibilityTimeoutSeconds: 30,
            maxReceiveCount: options.maxReceiveCount,
            deadLetter,
            clock,
          });
    return { queue, deadLetter };
  };

  it('delivers in send order, and a redelivered message after those already visible', async () => {
    const { queue } = make();
    for (const body of ['a', 'b', 'c']) await queue.send(body);
    const [a] = await queue.receive({ max: 1 });
    clock.advance(1);
    await queue.changeVisibility(a?.receiptHandle ?? '', 0);

    const rest = await queue.receive({ max: 10 });

    expect(rest.map((m) => m.body)).toEqual(['b', 'c', 'a']);
  });

  it('follows its clock for visibility and delay', async () => {
    const { queue } = make();
    await queue.send('now');
    await queue.send('delayed', { delaySeconds: 60 });
    expect((await queue.receive({ max: 10 })).map((m) => m.body)).toEqual(['now']);

    clock.advance(30);
    const again = await queue.receive({ max: 10, visibilityTimeoutSeconds: 120 });
    expect(again.map((m) => [m.body, m.receiveCount])).toEqual([['now', 2]]);
    clock.advance(30);
    expect((await queue.receive({ max: 10 })).map((m) => m.body)).toEqual(['delayed']);
  });

  it('reports depth and releases every in-flight message at once', async () => {
    const { queue } = make();
    await queue.sendBatch(['1', '2', '3']);
    await queue.send('later', { delaySeconds: 120 });
    const held = await queue.receive({ max: 2 });
    expect(queue.depth()).toEqual({ visible: 1, inFlight: 2, delayed: 1 });

    expect(queue.releaseInFlight()).toBe(2);

    expect(queue.depth()).toEqual({ visible: 3, inFlight: 0, delayed: 1 });
    await queue.delete(held[0]?.receiptHandle ?? '');
    const again = await queue.receive({ max: 10 });
    expect(again.map((m) => [m.body, m.receiveCount])).toEqual([
      ['1', 2],
      ['2', 2],
      ['3', 1],
    ]);
  });

  it('dead-letters with a fresh receive count and leaves the source queue empty', async () => {
    const { queue, deadLetter } = make({ maxReceiveCount: 1 });
    const id = await queue.send('poison');
    await queue.receive({ max: 1 });
    clock.advance(31);

    expect(await queue.receive({ max: 10 })).toEqual([]);
    expect(queue.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    expect(await deadLetter.receive({ max: 10 })).toMatchObject([{ id, body: 'poison', receiveCount: 1 }]);
  });

  it('delivers exactly `max` of more visible messages, in send order, for every max from 1 to 10', async () => {
    const { queue } = make();
    const taken: number[] = [];
    for (let max = 1; max <= 10; max++) {
      await queue.sendBatch(Array.from({ length: 10 }, (_, i) => `${max}.${i}`));
      await queue.send(`${max}.extra`);
      const got = await queue.receive({ max });
      taken.push(got.length);
      expect(got.map((m) => m.body)).toEqual(Array.from({ length: max }, (_, i) => `${max}.${i}`));
      for (const m of await queue.receive({ max: 10 })) await queue.delete(m.receiptHandle);
      for (const m of await queue.receive({ max: 10 })) await queue.delete(m.receiptHandle);
      for (const m of got) await queue.delete(m.receiptHandle);
    }
    expect(taken).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('fills a receive past dead-lettered messages with the ones behind them', async () => {
    const { queue, deadLetter } = make({ maxReceiveCount: 1 });
    await queue.sendBatch(['p1', 'p2', 'p3']);
    await queue.receive({ max: 3 });
    clock.advance(31);
    await queue.sendBatch(['g1', 'g2', 'g3', 'g4']);

    // The first pass reads three poison messages and one good one; the next passes ask for the rest.
    expect((await queue.receive({ max: 4 })).map((m) => m.body)).toEqual(['g1', 'g2', 'g3', 'g4']);
    expect(deadLetter.depth().visible).toBe(3);
  });

  it('delivers messages behind a dead-lettered one in the same receive', async () => {
    const { queue, deadLetter } = make({ maxReceiveCount: 1 });
    await queue.send('poison');
    await queue.receive({ max: 1 });
    clock.advance(31);
    await queue.send('good');

    expect((await queue.receive({ max: 1 })).map((m) => m.body)).toEqual(['good']);
    expect(deadLetter.depth().visible).toBe(1);
  });

  it.each([
    { wakeAtOnce: true, inTurn: ['m'] },
    { wakeAtOnce: false, inTurn: undefined },
  ])(
    'with wakeAtOnce $wakeAtOnce, hands a send to a long poll within the sender’s turn: $inTurn',
    async ({ wakeAtOnce, inTurn }) => {
      const queue = new SqliteWorkQueue({ db, name: 'q', visibilityTimeoutSeconds: 30, clock, wakeAtOnce });
      let received: string[] | undefined;
      const polling = queue.receive({ max: 1, waitSeconds: 5 }).then((m) => {
        received = m.map((message) => message.body);
      });

      await queue.send('m');
      for (let i = 0; i < 20; i++) await Promise.resolve(); // the rest of the sender's work: microtasks only

      expect(received).toEqual(inTurn);
      await polling;
      expect(received).toEqual(['m']);
    },
  );

  it('wakes a long poll on another connection to the same file', async () => {
    const path = tempDbPath();
    const a = openDatabase(path);
    const b = openDatabase(path);
    try {
      const receiver = new SqliteWorkQueue({ db: a, name: 'shared', visibilityTimeoutSeconds: 30 });
      const sender = new SqliteWorkQueue({ db: b, name: 'shared', visibilityTimeoutSeconds: 30 });
      const polling = receiver.receive({ max: 1, waitSeconds: 10 });

      await sender.send('across');

      expect((await polling).map((m) => m.body)).toEqual(['across']);
    } finally {
      a.close();
      b.close();
    }
  });

  it('refuses a dead-letter queue without a receive count, or in another database', () => {
    const other = memoryDb();
    try {
      const elsewhere = new SqliteWorkQueue({ db: other, name: 'dlq', visibilityTimeoutSeconds: 30 });
      expect(
        () => new SqliteWorkQueue({ db, name: 'q', visibilityTimeoutSeconds: 30, deadLetter: elsewhere }),
      ).toThrow(ValidationError);
      expect(
        () =>
          new SqliteWorkQueue({
            db,
            name: 'q',
            visibilityTimeoutSeconds: 30,
            maxReceiveCount: 3,
            deadLetter: elsewhere,
          }),
      ).toThrow(/same database/);
    } finally {
      other.close();
    }
  });

  it('refuses an empty body and a delay over 900 s', async () => {
    const { queue } = make();

    await expect(queue.send('')).rejects.toBeInstanceOf(ValidationError);
    await expect(queue.send('x', { delaySeconds: 901 })).rejects.toBeInstanceOf(ValidationError);
    expect(queue.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('ignores a visibility change through a stale receipt handle', async () => {
    const { queue } = make();
    await queue.send('x');
    const [first] = await queue.receive({ max: 1 });
    await queue.changeVisibility(first?.receiptHandle ?? '', 0);
    const [second] = await queue.receive({ max: 1 });

    await queue.changeVisibility(first?.receiptHandle ?? '', 0);

    expect(second?.receiveCount).toBe(2);
    expect(await queue.receive({ max: 1 })).toEqual([]);
  });

  it("leaves the message that took a deleted message's seq alone when the old handle comes back", async () => {
    const { queue } = make();
    await queue.send('first');
    const [first] = await queue.receive({ max: 1 });
    await queue.delete(first?.receiptHandle ?? '');
    await queue.send('second'); // the table is empty again: SQLite hands out the same rowid
    const [second] = await queue.receive({ max: 1 });
    expect(second?.receiptHandle.split('.')[0]).toBe(first?.receiptHandle.split('.')[0]);

    await queue.delete(first?.receiptHandle ?? '');
    await queue.changeVisibility(first?.receiptHandle ?? '', 0);

    expect(queue.depth()).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
    await queue.delete(second?.receiptHandle ?? '');
    expect(queue.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('ignores handles it never gave out', async () => {
    const { queue } = make();
    await queue.send('x');
    const [held] = await queue.receive({ max: 1 });
    const seq = held?.receiptHandle.split('.')[0] ?? '';

    for (const handle of [
      '',
      'nonsense',
      '.x',
      `${seq}`,
      `${seq}.`,
      `${seq}.not-this-one`,
      `-${seq}.x`,
      '1e3.x',
    ]) {
      await queue.delete(handle);
      await queue.changeVisibility(handle, 0);
    }

    expect(queue.depth()).toEqual({ visible: 0, inFlight: 1, delayed: 0 });
  });
});

describe('schema version 3', () => {
  it('rebuilds a version 2 messages table without its id and receipt indexes, keeping every message', async () => {
    const path = tempDbPath();
    const raw = new Database(path);
    // The messages table as versions 1 and 2 made it, one message waiting and one in flight.
    raw.exec(`
      CREATE TABLE messages (
        seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, queue TEXT NOT NULL, body TEXT NOT NULL,
        sent_at TEXT NOT NULL, visible_at_ms INTEGER NOT NULL, receive_count INTEGER NOT NULL DEFAULT 0, receipt TEXT
      ) STRICT;
      CREATE INDEX messages_by_visibility ON messages (queue, visible_at_ms, seq);
      CREATE UNIQUE INDEX messages_by_receipt ON messages (receipt) WHERE receipt IS NOT NULL;
      INSERT INTO messages VALUES (7, 'id-7', 'q', 'waiting', '2026-01-01T00:00:00.000Z', 0, 0, NULL);
      INSERT INTO messages VALUES (9, 'id-9', 'q', 'in flight', '2026-01-01T00:00:00.000Z', 9e15, 1, 'old-handle');
    `);
    raw.pragma('user_version = 2');
    raw.close();

    const db = openDatabase(path);
    try {
      const indexes = db
        .prepare(
          "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'messages' ORDER BY name",
        )
        .pluck()
        .all();
      expect(indexes).toEqual(['messages_by_visibility']);
      const queue = new SqliteWorkQueue({ db, name: 'q', visibilityTimeoutSeconds: 30 });
      expect(queue.depth()).toEqual({ visible: 1, inFlight: 1, delayed: 0 });
      await queue.delete('old-handle'); // a handle of the old shape: stale, as after any restart
      expect(queue.releaseInFlight()).toBe(1);

      const messages = await queue.receive({ max: 10 });

      expect(messages.map((m) => [m.id, m.body, m.receiveCount])).toEqual([
        ['id-7', 'waiting', 1],
        ['id-9', 'in flight', 2],
      ]);
      for (const m of messages) await queue.delete(m.receiptHandle);
      expect(queue.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    } finally {
      db.close();
    }
  });
});

describe('SqliteLogStore', () => {
  it('caps a page at LOG_PAGE_MAX_LINES and refuses a limit below 1', async () => {
    const db = memoryDb();
    try {
      const logs = new SqliteLogStore({ db });
      await logs.append(
        'r',
        Array.from({ length: LOG_PAGE_MAX_LINES + 1 }, (_, i) => ({
          stream: 'stdout' as const,
          text: `${i}`,
        })),
      );

      expect((await logs.read('r', { limit: 10_000 })).lines).toHaveLength(LOG_PAGE_MAX_LINES);
      await expect(logs.read('r', { limit: 0 })).rejects.toBeInstanceOf(ValidationError);
    } finally {
      db.close();
    }
  });

  it('numbers lines per run from 1', async () => {
    const db = memoryDb();
    try {
      const logs = new SqliteLogStore({ db });
      await logs.append('a', [{ stream: 'stdout', text: 'x' }]);
      await logs.append('b', [{ stream: 'stdout', text: 'y' }]);
      await logs.append('a', [{ stream: 'stdout', text: 'z' }]);

      expect((await logs.read('a')).lines.map((l) => l.seq)).toEqual([1, 2]);
      expect((await logs.read('b')).lines.map((l) => l.seq)).toEqual([1]);
    } finally {
      db.close();
    }
  });
});
