import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalAssetStore } from '../../../shared/adapters/local/asset-store.ts';
import { AssetExistsError, AssetOutsideRootError, ValidationError } from '../../../shared/domain/errors.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('LocalAssetStore.put', () => {
  let sandbox: string;
  let root: string;
  let store: LocalAssetStore;

  beforeEach(() => {
    sandbox = realpathSync(mkdtempSync(join(tmpdir(), 'rw-assets-put-')));
    root = join(sandbox, 'assets');
    mkdirSync(join(sandbox, 'outside'));
    store = new LocalAssetStore({ root });
  });
  afterEach(() => rmSync(sandbox, { recursive: true, force: true }));

  it('creates the root and the directories, then lists and locates the asset', async () => {
    const result = await store.put('tools/linux/setup.sh', bytes('#!/bin/sh\necho hi\n'));

    expect(result).toEqual({
      asset: { path: 'tools/linux/setup.sh', size: 18, type: 'script' },
      replaced: false,
    });
    expect(readFileSync(join(root, 'tools/linux/setup.sh'), 'utf8')).toBe('#!/bin/sh\necho hi\n');
    expect(await store.list()).toEqual([result.asset]);
    expect(await store.locate('tools/linux/setup.sh')).toEqual({
      kind: 'file',
      path: join(root, 'tools/linux/setup.sh'),
    });
  });

  it('refuses to replace an existing asset without overwrite, and leaves it as it was', async () => {
    await store.put('site.yml', bytes('first'));

    await expect(store.put('site.yml', bytes('second'))).rejects.toBeInstanceOf(AssetExistsError);
    expect(readFileSync(join(root, 'site.yml'), 'utf8')).toBe('first');
  });

  it('replaces it with overwrite and says so', async () => {
    await store.put('site.yml', bytes('first'));

    const result = await store.put('site.yml', bytes('second!'), { overwrite: true });

    expect(result).toMatchObject({ replaced: true, asset: { size: 7 } });
    expect(readFileSync(join(root, 'site.yml'), 'utf8')).toBe('second!');
  });

  it('leaves no temporary file behind, whatever happens', async () => {
    await store.put('a/site.yml', bytes('x'));
    await store.put('a/site.yml', bytes('x')).catch(() => undefined);
    await store.put('a/site.yml', bytes('y'), { overwrite: true });

    expect(readdirSync(join(root, 'a'))).toEqual(['site.yml']);
  });

  it.each([
    ['../escape.yml', AssetOutsideRootError],
    ['/etc/cron.d/x.sh', AssetOutsideRootError],
    ['.git/hooks/pre-commit.sh', ValidationError],
    ['notes.txt', ValidationError],
  ])('refuses %s and writes nothing', async (path, errorClass) => {
    await expect(store.put(path, bytes('x'))).rejects.toBeInstanceOf(errorClass);

    expect(existsSync(join(sandbox, 'escape.yml'))).toBe(false);
    expect(existsSync(root) ? readdirSync(root) : []).toEqual([]);
  });

  it('refuses to write through a directory symlink that leaves the root', async () => {
    mkdirSync(root);
    symlinkSync(join(sandbox, 'outside'), join(root, 'linked'));

    await expect(store.put('linked/evil.sh', bytes('x'))).rejects.toBeInstanceOf(AssetOutsideRootError);
    expect(readdirSync(join(sandbox, 'outside'))).toEqual([]);
  });

  it('replaces a symlink at the destination rather than writing through it', async () => {
    mkdirSync(root);
    writeFileSync(join(sandbox, 'outside', 'target.yml'), 'untouched');
    symlinkSync(join(sandbox, 'outside', 'target.yml'), join(root, 'site.yml'));

    await expect(store.put('site.yml', bytes('new'))).rejects.toBeInstanceOf(AssetExistsError);
    await store.put('site.yml', bytes('new'), { overwrite: true });

    expect(readFileSync(join(sandbox, 'outside', 'target.yml'), 'utf8')).toBe('untouched');
    expect(readFileSync(join(root, 'site.yml'), 'utf8')).toBe('new');
  });

  it('refuses a path whose directory part is a file', async () => {
    await store.put('tools.sh', bytes('x'));

    await expect(store.put('tools.sh/inner.sh', bytes('x'))).rejects.toBeInstanceOf(ValidationError);
  });

  it('lets exactly one of two racing uploads of the same new path win', async () => {
    const results = await Promise.allSettled([
      store.put('race.yml', bytes('one')),
      store.put('race.yml', bytes('two')),
    ]);

    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(
      results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason),
    ).toEqual([expect.any(AssetExistsError)]);
    expect(['one', 'two']).toContain(readFileSync(join(root, 'race.yml'), 'utf8'));
  });
});
