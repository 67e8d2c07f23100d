import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, posix, relative, resolve, sep, win32 } from 'node:path';
import { AssetNotFoundError, AssetOutsideRootError, ValidationError } from '../../domain/errors.ts';
import { assetTypeOf } from '../../domain/task.ts';
import type { AssetInfo, AssetLocation, AssetStore } from '../../ports/asset-store.ts';

const DEFAULT_MAX_ENTRIES = 10_000;

/**
 * AssetStore over a local directory (local mode, the relay). Paths are
 * relative to the root; absolute paths, `..` escapes and symlinks resolving
 * outside the root are refused. Hidden files and directories (`.git`, `.env`)
 * are neither listed nor served.
 *
 * Errors name the path the caller gave, never the root or what lies in it:
 * they reach API clients.
 *
 * @example
 * const assets = new LocalAssetStore({ root: join(dataDir, 'assets') });
 * const where = await assets.locate('hello/site.yml'); // { kind: 'file', path: '/…/assets/hello/site.yml' }
 */
export class LocalAssetStore implements AssetStore {
  readonly #root: string;
  readonly #maxEntries: number;

  constructor(options: { root: string; maxEntries?: number }) {
    this.#root = resolve(options.root);
    this.#maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
  }

  async locate(path: string): Promise<AssetLocation> {
    if (path.includes('\0')) {
      throw new ValidationError('Asset path must not contain NUL', [
        { path: 'asset', message: 'contains NUL' },
      ]);
    }
    if (path.length === 0) throw new AssetNotFoundError('Asset path is empty');
    // Checked with both flavours so `C:\x` or `\\host\share` is refused on POSIX as well.
    if (isAbsolute(path) || posix.isAbsolute(path) || win32.isAbsolute(path)) {
      throw new AssetOutsideRootError(
        `Asset path "${path}" is absolute; give a path relative to the asset root`,
      );
    }
    const root = await this.#realRoot();
    const lexical = resolve(root ?? this.#root, path);
    if (!isInside(root ?? this.#root, lexical)) {
      throw new AssetOutsideRootError(`Asset path "${path}" resolves outside the asset root`);
    }
    if (root === undefined) throw new AssetNotFoundError(`Asset "${path}" does not exist`);
    const hidden = relative(root, lexical)
      .split(sep)
      .some((segment) => segment.startsWith('.'));
    if (hidden) throw new AssetNotFoundError(`Asset "${path}" does not exist`);

    let real: string;
    try {
      real = await realpath(lexical);
    } catch (error) {
      if (isErrno(error, 'ENOENT') || isErrno(error, 'ENOTDIR') || isErrno(error, 'ELOOP')) {
        throw new AssetNotFoundError(`Asset "${path}" does not exist`);
      }
      throw error;
    }
    // The lexical check cannot see symlinks; the resolved path can.
    if (!isInside(root, real)) {
      throw new AssetOutsideRootError(`Asset path "${path}" resolves outside the asset root`);
    }
    const info = await stat(real);
    if (!info.isFile()) throw new AssetNotFoundError(`Asset "${path}" is not a file`);
    // The resolved path, so a symlink swapped after this check cannot redirect the reader outside the root.
    return { kind: 'file', path: real };
  }

  /**
   * Every regular file under the root, sorted by path, at most `maxEntries`
   * (10,000 by default) so a mistaken root such as `/` cannot stall the API.
   * Symlinks are followed only while they stay inside the root.
   */
  async list(): Promise<readonly AssetInfo[]> {
    const root = await this.#realRoot();
    if (root === undefined) return [];
    const found: AssetInfo[] = [];
    // Real paths of directories already walked: a symlink loop inside the root is walked once.
    const seen = new Set<string>([root]);
    const walk = async (dir: string, prefix: string): Promise<void> => {
      let entries: Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch {
        return; // unreadable or vanished meanwhile: list what can be listed
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const entry of entries) {
        if (found.length >= this.#maxEntries) return;
        if (entry.name.startsWith('.')) continue;
        const full = join(dir, entry.name);
        const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
        let real = full;
        if (entry.isSymbolicLink()) {
          try {
            real = await realpath(full);
          } catch {
            continue; // dangling
          }
          if (!isInside(root, real)) continue;
        } else if (!entry.isFile() && !entry.isDirectory()) {
          continue;
        }
        const info = await stat(real).catch(() => undefined);
        if (info === undefined) continue;
        if (info.isDirectory()) {
          if (seen.has(real)) continue;
          seen.add(real);
          await walk(real, rel);
        } else if (info.isFile()) {
          found.push({ path: rel, size: info.size, type: assetTypeOf(rel) ?? 'other' });
        }
      }
    };
    await walk(root, '');
    return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async #realRoot(): Promise<string | undefined> {
    try {
      return await realpath(this.#root);
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return undefined;
      throw error;
    }
  }
}

function isInside(root: string, candidate: string): boolean {
  const rel = relative(root, candidate);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && 'code' in error && error.code === code;
}
