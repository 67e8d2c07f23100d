import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SPARE_DIR, SpareWorkDirs } from '../../../runners/relay/work-dirs.ts';

describe('SpareWorkDirs', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'rw-spares-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  /** A work dir as the relay makes one (mode 0700), holding `files`. */
  const workDir = (name: string, files: Record<string, string> = {}): string => {
    const dir = join(root, name);
    mkdirSync(dir, { mode: 0o700 });
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(join(dir, file, '..'), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
    return dir;
  };
  const inode = (path: string) => statSync(path).ino;

  it("keeps an ended run's dir emptied and makes the next run's dir of it with one rename", async () => {
    const spares = new SpareWorkDirs(root, 4);
    const ended = workDir('run-1.1', { 'output.log': 'ok\n', 'private/key': 'secret', 'cp/.x': '' });
    const was = inode(ended);

    await spares.give(ended);

    expect(existsSync(ended)).toBe(false);
    expect(spares.size).toBe(1);
    expect(readdirSync(root)).toEqual([SPARE_DIR]);
    const next = join(root, 'run-2.1');
    expect(spares.take(next)).toBe(true);
    expect(inode(next)).toBe(was);
    expect(readdirSync(next)).toEqual([]);
    expect(statSync(next).mode & 0o7777).toBe(0o700);
    expect(spares.size).toBe(0);
    expect(readdirSync(join(root, SPARE_DIR))).toEqual([]);
  });

  it('answers false with no spare, so the caller makes the dir', () => {
    const spares = new SpareWorkDirs(root, 4);
    const next = join(root, 'run-1.1');
    expect(spares.take(next)).toBe(false);
    expect(existsSync(next)).toBe(false);
  });

  it('keeps at most `keep` spares and removes the dirs beyond them', async () => {
    const spares = new SpareWorkDirs(root, 2);
    const dirs = ['a.1', 'b.1', 'c.1'].map((n) => workDir(n, { f: 'x' }));
    for (const dir of dirs) await spares.give(dir);
    expect(spares.size).toBe(2);
    expect(dirs.filter((d) => existsSync(d))).toEqual([]);
    expect(readdirSync(join(root, SPARE_DIR))).toHaveLength(2);
  });

  it('keeps at most `keep` spares when several runs end at once', async () => {
    const spares = new SpareWorkDirs(root, 2);
    const dirs = ['a.1', 'b.1', 'c.1', 'd.1'].map((n) => workDir(n, { f: 'x', 'sub/g': 'y' }));
    await Promise.all(dirs.map((dir) => spares.give(dir)));
    expect(spares.size).toBe(2);
    expect(dirs.filter((d) => existsSync(d))).toEqual([]);
    expect(readdirSync(join(root, SPARE_DIR))).toHaveLength(2);
  });

  it('removes, not keeps, a dir whose mode the run changed', async () => {
    const spares = new SpareWorkDirs(root, 4);
    const dir = workDir('run-1.1', { f: 'x' });
    chmodSync(dir, 0o755);
    await spares.give(dir);
    expect(existsSync(dir)).toBe(false);
    expect(spares.size).toBe(0);
  });

  it('removes a link in place of the dir without following it', async () => {
    const spares = new SpareWorkDirs(root, 4);
    const elsewhere = workDir('elsewhere', { keep: 'me' });
    const link = join(root, 'run-1.1');
    symlinkSync(elsewhere, link);
    await spares.give(link);
    expect(existsSync(link)).toBe(false);
    expect(readdirSync(elsewhere)).toEqual(['keep']);
    expect(spares.size).toBe(0);
  });

  it('never rejects, for a dir that is already gone', async () => {
    const spares = new SpareWorkDirs(root, 4);
    await expect(spares.give(join(root, 'never-made'))).resolves.toBeUndefined();
    expect(spares.size).toBe(0);
  });

  it('removes a spare something wrote into after it was given, and takes the next clean one', async () => {
    const spares = new SpareWorkDirs(root, 4);
    await spares.give(workDir('a.1'));
    await spares.give(workDir('b.1'));
    // The spare taken first (the last given) gets a file, as a straggler of its ended run could write by its cwd.
    const lastGiven = readdirSync(join(root, SPARE_DIR)).sort().at(-1);
    writeFileSync(join(root, SPARE_DIR, String(lastGiven), 'late'), 'from the ended run');
    const next = join(root, 'run-3.1');

    expect(spares.take(next)).toBe(true);
    expect(readdirSync(next)).toEqual([]);
    expect(spares.size).toBe(0);
    await expect.poll(() => readdirSync(join(root, SPARE_DIR))).toEqual([]);
  });

  it('keeps the spare when the dir to make exists and is not empty (the caller then makes it its own way)', async () => {
    const spares = new SpareWorkDirs(root, 4);
    await spares.give(workDir('a.1'));
    const busy = workDir('run-2.1', { f: 'x' });
    expect(spares.take(busy)).toBe(false);
    expect(spares.size).toBe(1);
    expect(readdirSync(busy)).toEqual(['f']);
  });

  it('keeps the spares of two relays sharing a work root apart', async () => {
    const one = new SpareWorkDirs(root, 4);
    const two = new SpareWorkDirs(root, 4);
    const first = workDir('a.1');
    const second = workDir('b.1');
    const inodes = [inode(first), inode(second)];
    await one.give(first);
    await two.give(second);
    expect(readdirSync(join(root, SPARE_DIR))).toHaveLength(2);
    expect(one.take(join(root, 'run-1.1'))).toBe(true);
    expect(two.take(join(root, 'run-2.1'))).toBe(true);
    expect([inode(join(root, 'run-1.1')), inode(join(root, 'run-2.1'))]).toEqual(inodes);
  });

  it('clear removes every spare, also those an earlier relay left', async () => {
    mkdirSync(join(root, SPARE_DIR, '7'), { recursive: true });
    const spares = new SpareWorkDirs(root, 4);
    await spares.give(workDir('a.1'));
    await spares.clear();
    expect(existsSync(join(root, SPARE_DIR))).toBe(false);
    expect(spares.take(join(root, 'run-2.1'))).toBe(false);
    // Still usable after a clear: the spare root is made again.
    await spares.give(workDir('b.1'));
    expect(spares.take(join(root, 'run-3.1'))).toBe(true);
  });
});
