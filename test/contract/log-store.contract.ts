import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/domain/errors.ts';
import {
  LOG_PAGE_MAX_LINES,
  type LogLine,
  type LogLineInput,
  type LogStore,
} from '../../shared/ports/log-store.ts';

export interface LogStoreFixture {
  readonly store: LogStore;
  cleanup(): Promise<void>;
}

const out = (text: string, at?: string): LogLineInput =>
  at === undefined ? { stream: 'stdout', text } : { stream: 'stdout', text, at };

/** Page forward until a page comes back empty; fails if an empty page moves the cursor. */
async function readAll(
  store: LogStore,
  runId: string,
  limit: number,
): Promise<{ lines: LogLine[]; cursor: string }> {
  const lines: LogLine[] = [];
  let page = await store.read(runId, { limit });
  for (let guard = 0; page.lines.length > 0; guard += 1) {
    expect(guard).toBeLessThan(1000);
    expect(page.lines.length).toBeLessThanOrEqual(limit);
    lines.push(...page.lines);
    page = await store.read(runId, { limit, cursor: page.nextCursor });
  }
  const again = await store.read(runId, { limit, cursor: page.nextCursor });
  expect(again).toEqual({ lines: [], nextCursor: page.nextCursor });
  return { lines, cursor: page.nextCursor };
}

const isIncreasing = (values: readonly number[]): boolean =>
  values.every((v, i) => i === 0 || v > values[i - 1]!);

/**
 * The LogStore contract. Every adapter (SQLite, CloudWatch Logs) runs this same suite.
 *
 * @example
 * logStoreContract('sqlite', async () => {
 *   const db = openDatabase(':memory:');
 *   return { store: new SqliteLogStore({ db }), cleanup: async () => db.close() };
 * });
 */
export function logStoreContract(name: string, makeStore: () => Promise<LogStoreFixture>): void {
  describe(`LogStore contract: ${name}`, () => {
    let fixture: LogStoreFixture;
    let store: LogStore;
    let runId: string;

    beforeEach(async () => {
      fixture = await makeStore();
      store = fixture.store;
      runId = `run-${randomUUID()}`;
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    it('answers an empty page and a stable cursor for a run with no output', async () => {
      const first = await store.read(runId);

      expect(first.lines).toEqual([]);
      expect(await store.read(runId, { cursor: first.nextCursor })).toEqual(first);
    });

    it('reads appended lines back in order with stream, text and time', async () => {
      const stamp = '2026-01-01T00:00:00.000Z';

      await store.append(runId, [
        out('PLAY [all]', stamp),
        { stream: 'stderr', text: 'warning: x' },
        { stream: 'system', text: 'exit 0' },
      ]);
      const { lines } = await store.read(runId);

      expect(lines.map((l) => [l.stream, l.text])).toEqual([
        ['stdout', 'PLAY [all]'],
        ['stderr', 'warning: x'],
        ['system', 'exit 0'],
      ]);
      expect(lines[0]?.at).toBe(stamp);
      expect(Number.isNaN(Date.parse(lines[1]?.at ?? ''))).toBe(false);
      expect(isIncreasing(lines.map((l) => l.seq))).toBe(true);
    });

    it('follows a run: each read returns only what arrived since the cursor', async () => {
      await store.append(runId, [out('one'), out('two')]);
      const first = await store.read(runId);

      await store.append(runId, [out('three')]);
      const second = await store.read(runId, { cursor: first.nextCursor });
      const idle = await store.read(runId, { cursor: second.nextCursor });
      await store.append(runId, [out('four'), out('five')]);
      const third = await store.read(runId, { cursor: idle.nextCursor });

      expect(first.lines.map((l) => l.text)).toEqual(['one', 'two']);
      expect(second.lines.map((l) => l.text)).toEqual(['three']);
      expect(idle).toEqual({ lines: [], nextCursor: second.nextCursor });
      expect(third.lines.map((l) => l.text)).toEqual(['four', 'five']);
    });

    it('pages with a limit and reaches every line once', async () => {
      const texts = Array.from({ length: 23 }, (_, i) => `line ${i}`);
      await store.append(
        runId,
        texts.map((t) => out(t)),
      );

      const { lines } = await readAll(store, runId, 5);

      expect(lines.map((l) => l.text)).toEqual(texts);
      expect(isIncreasing(lines.map((l) => l.seq))).toBe(true);
    });

    it('reads LOG_PAGE_DEFAULT_LINES (500) lines by default', async () => {
      await store.append(
        runId,
        Array.from({ length: 600 }, (_, i) => out(`l${i}`)),
      );

      const page = await store.read(runId);
      const rest = await store.read(runId, { cursor: page.nextCursor });

      expect(page.lines).toHaveLength(500);
      expect(rest.lines.map((l) => l.text)).toEqual(Array.from({ length: 100 }, (_, i) => `l${i + 500}`));
    });

    it('honours a limit up to LOG_PAGE_MAX_LINES and caps a page there, as every backend does', async () => {
      await store.append(
        runId,
        Array.from({ length: LOG_PAGE_MAX_LINES + 50 }, (_, i) => out(`l${i}`)),
      );

      const asked = await store.read(runId, { limit: LOG_PAGE_MAX_LINES - 1 });
      const capped = await store.read(runId, { limit: LOG_PAGE_MAX_LINES + 50 });

      expect(asked.lines).toHaveLength(LOG_PAGE_MAX_LINES - 1);
      expect(capped.lines).toHaveLength(LOG_PAGE_MAX_LINES);
    });

    it('keeps runs apart', async () => {
      const other = `run-${randomUUID()}`;

      await store.append(runId, [out('mine 1')]);
      await store.append(other, [out('theirs 1')]);
      await store.append(runId, [out('mine 2')]);
      const mine = await store.read(runId);
      const theirs = await store.read(other);

      expect(mine.lines.map((l) => l.text)).toEqual(['mine 1', 'mine 2']);
      expect(theirs.lines.map((l) => l.text)).toEqual(['theirs 1']);
    });

    it('keeps the order of many small appends', async () => {
      const texts = Array.from({ length: 40 }, (_, i) => `step ${i}`);

      for (const text of texts) await store.append(runId, [out(text)]);
      const { lines } = await readAll(store, runId, 7);

      expect(lines.map((l) => l.text)).toEqual(texts);
    });

    it('keeps every line of concurrent appends, each batch in its own order', async () => {
      const a = ['a1', 'a2', 'a3'];
      const b = ['b1', 'b2', 'b3'];

      await Promise.all([
        store.append(
          runId,
          a.map((t) => out(t)),
        ),
        store.append(
          runId,
          b.map((t) => out(t)),
        ),
      ]);
      const texts = (await store.read(runId)).lines.map((l) => l.text);

      expect([...texts].sort()).toEqual([...a, ...b].sort());
      expect(texts.filter((t) => t.startsWith('a'))).toEqual(a);
      expect(texts.filter((t) => t.startsWith('b'))).toEqual(b);
    });

    it('ignores an empty append', async () => {
      await store.append(runId, []);

      expect((await store.read(runId)).lines).toEqual([]);
    });

    it('refuses a cursor it did not make with ValidationError', async () => {
      await store.append(runId, [out('x')]);

      for (const cursor of ['not a cursor!', '%%%', '']) {
        await expect(store.read(runId, { cursor })).rejects.toBeInstanceOf(ValidationError);
      }
    });
  });
}
