import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * Local mode's SQLite connection batches every write of one event-loop turn
 * into one transaction (shared/adapters/sqlite/database.ts). A store that
 * opened its own transaction would commit the open batch's writes without
 * the fsync a durable write waits for, or fail inside it; so a transaction
 * is opened in one place only: database.ts (the batch, commitWithFsync, which
 * group-commit.ts uses for a durable write with no WAL to fsync). This test
 * holds the source to that, so a new store goes through writeInBatch,
 * durableWrite or commitWithFsync.
 */

const REPO = join(import.meta.dirname, '../../..');
const SOURCE = ['shared', 'functions', 'runners', 'bin', 'infra', 'tools'];
const ALLOWED = ['shared/adapters/sqlite/database.ts'];

/** better-sqlite3's transaction(), or a transaction begun by hand in SQL. */
const OPENS_A_TRANSACTION = /\.transaction\(|['"`]\s*BEGIN\b/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Code that reaches SQLite: it imports better-sqlite3 or lives beside the SQLite adapters. */
const USES_SQLITE = /from '[^']*(better-sqlite3|adapters\/sqlite\/[^']*)'/;

/** The files under `folders` that reach SQLite and whose code (comments left out) opens a transaction. */
function filesOpeningTransactions(folders: readonly string[]): string[] {
  return folders
    .flatMap((folder) => sourceFiles(join(REPO, folder)))
    .filter((file) => {
      const code = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/^\s*\/\/.*$/gm, '');
      const sqlite = USES_SQLITE.test(code) || relative(REPO, file).startsWith('shared/adapters/sqlite/');
      return sqlite && OPENS_A_TRANSACTION.test(code);
    })
    .map((file) => relative(REPO, file))
    .sort();
}

describe("local mode's write batch", () => {
  it('is the only way a write reaches SQLite: no transaction is opened outside database.ts', () => {
    expect(filesOpeningTransactions(SOURCE)).toEqual(ALLOWED);
  });

  it('is found by the scan in both forms (so the test above can fail)', () => {
    expect(OPENS_A_TRANSACTION.test('db.transaction(() => insert.run(row)).immediate();')).toBe(true);
    expect(OPENS_A_TRANSACTION.test("db.exec('BEGIN IMMEDIATE');")).toBe(true);
    expect(OPENS_A_TRANSACTION.test('db.prepare("BEGIN")')).toBe(true);
    expect(OPENS_A_TRANSACTION.test("const note = 'began the batch';")).toBe(false);
  });
});
