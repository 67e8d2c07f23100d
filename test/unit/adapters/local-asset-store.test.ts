import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalAssetStore } from '../../../shared/adapters/local/asset-store.ts';
import { AssetNotFoundError, AssetOutsideRootError } from '../../../shared/domain/errors.ts';

describe('LocalAssetStore', () => {
  let sandbox: string;
  let root: string;
  let store: LocalAssetStore;

  const file = (path: string, content = 'x'): void => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
  };

  beforeEach(() => {
    sandbox = realpathSync(mkdtempSync(join(tmpdir(), 'rw-assets-')));
    root = join(sandbox, 'assets');
    file(join(root, 'hello', 'site.yml'), '- hosts: all\n');
    file(join(sandbox, 'outside', 'secret.txt'), 'not yours');
    store = new LocalAssetStore({ root });
  });
  afterEach(() => rmSync(sandbox, { recursive: true, force: true }));

  describe('locate', () => {
    it('finds a file under the root', async () => {
      expect(await store.locate('hello/site.yml')).toEqual({
        kind: 'file',
        path: join(root, 'hello', 'site.yml'),
      });
    });

    it('accepts a path with a harmless `..` that stays inside the root', async () => {
      expect(await store.locate('hello/../hello/./site.yml')).toEqual({
        kind: 'file',
        path: join(root, 'hello', 'site.yml'),
      });
    });

    it('refuses a `..` escape, naming the path but not the root', async () => {
      const attempt = store.locate('../outside/secret.txt');

      await expect(attempt).rejects.toBeInstanceOf(AssetOutsideRootError);
      await expect(attempt).rejects.toThrow('"../outside/secret.txt"');
      await expect(attempt).rejects.not.toThrow(sandbox);
    });

    it('refuses a `..` escape even when the target does not exist', async () => {
      await expect(store.locate('hello/../../nope.yml')).rejects.toBeInstanceOf(AssetOutsideRootError);
    });

    it('refuses absolute paths, POSIX and Windows style', async () => {
      for (const path of [
        join(root, 'hello', 'site.yml'),
        '/etc/passwd',
        'C:\\Windows\\win.ini',
        '\\\\host\\share',
      ]) {
        await expect(store.locate(path)).rejects.toBeInstanceOf(AssetOutsideRootError);
      }
    });

    it('refuses a symlinked file that resolves outside the root', async () => {
      symlinkSync(join(sandbox, 'outside', 'secret.txt'), join(root, 'hello', 'innocent.yml'));

      await expect(store.locate('hello/innocent.yml')).rejects.toBeInstanceOf(AssetOutsideRootError);
    });

    it('refuses a path through a symlinked directory that resolves outside the root', async () => {
      symlinkSync(join(sandbox, 'outside'), join(root, 'linked'));

      await expect(store.locate('linked/secret.txt')).rejects.toBeInstanceOf(AssetOutsideRootError);
    });

    it('follows a symlink that stays inside the root', async () => {
      symlinkSync(join(root, 'hello', 'site.yml'), join(root, 'alias.yml'));

      expect(await store.locate('alias.yml')).toEqual({
        kind: 'file',
        path: join(root, 'hello', 'site.yml'),
      });
    });

    it('answers AssetNotFoundError for a missing file, a directory and a hidden file', async () => {
      file(join(root, '.env'), 'TOKEN=x');

      for (const path of ['hello/missing.yml', 'hello', '.env', '']) {
        await expect(store.locate(path)).rejects.toBeInstanceOf(AssetNotFoundError);
      }
    });

    it('answers AssetNotFoundError when the root does not exist', async () => {
      const empty = new LocalAssetStore({ root: join(sandbox, 'nowhere') });

      await expect(empty.locate('site.yml')).rejects.toBeInstanceOf(AssetNotFoundError);
    });
  });

  describe('list', () => {
    it('lists every file sorted by path with size and type, skipping dotfiles', async () => {
      file(join(root, 'scripts', 'install.sh'), '#!/bin/sh\n');
      file(join(root, 'win', 'setup.ps1'));
      file(join(root, 'pkgs', 'agent.rpm'));
      file(join(root, 'pkgs', 'agent.deb'));
      file(join(root, 'play.YAML'));
      file(join(root, 'README.md'));
      file(join(root, '.git', 'config'));
      file(join(root, 'hello', '.secret.yml'));

      const listed = await store.list();

      expect(listed).toEqual([
        { path: 'README.md', size: 1, type: 'other' },
        { path: 'hello/site.yml', size: 13, type: 'playbook' },
        { path: 'pkgs/agent.deb', size: 1, type: 'deb' },
        { path: 'pkgs/agent.rpm', size: 1, type: 'rpm' },
        { path: 'play.YAML', size: 1, type: 'playbook' },
        { path: 'scripts/install.sh', size: 10, type: 'script' },
        { path: 'win/setup.ps1', size: 1, type: 'powershell' },
      ]);
    });

    it('leaves out symlinks that resolve outside the root and survives a symlink loop', async () => {
      symlinkSync(join(sandbox, 'outside'), join(root, 'escape'));
      symlinkSync(join(sandbox, 'outside', 'secret.txt'), join(root, 'secret.txt'));
      symlinkSync(root, join(root, 'hello', 'loop'));

      const paths = (await store.list()).map((a) => a.path);

      expect(paths).toEqual(['hello/site.yml']);
    });

    it('stops at the entry cap', async () => {
      for (let i = 0; i < 30; i += 1) file(join(root, 'many', `f${String(i).padStart(2, '0')}.sh`));
      const capped = new LocalAssetStore({ root, maxEntries: 10 });

      expect(await capped.list()).toHaveLength(10);
    });

    it('lists nothing when the root does not exist', async () => {
      expect(await new LocalAssetStore({ root: join(sandbox, 'nowhere') }).list()).toEqual([]);
    });
  });
});
