import { randomUUID } from 'node:crypto';
import { constants, type Dirent, realpathSync, statSync } from 'node:fs';
import {
  copyFile,
  link,
  lstat,
  mkdir,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { isAbsolute, join, posix, relative, resolve, sep, win32 } from 'node:path';
import {
  AssetExistsError,
  AssetNotFoundError,
  AssetOutsideRootError,
  ValidationError,
} from '../../domain/errors.ts';
import { assetTypeOf } from '../../domain/task.ts';
import type * as port from '../../ports/asset-store.ts';
import { checkUploadPath, DEFAULT_MAX_ENTRIES, uploaded } from '../object-store/naming.ts';

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
 * await assets.put('tools/setup.sh', bytes); // written to a hidden temp file, then linked into place
 */
export class LocalAssetStore implements port.AssetStore {
  readonly backend = 'local' as const;
  readonly #root: string;
  readonly #maxEntries: number;

  constructor(options: { root: string; maxEntries?: number }) {
    this.#root = resolve(options.root);
    this.#maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
  }

  /** For staging to an object store: in-cloud tasks cannot read this host's files. */
  readonly read = async (path: string): Promise<Uint8Array> => {
    const where = await this.locate(path);
    if (where.kind !== 'file') throw new AssetNotFoundError(`Asset "${path}" does not exist`);
    return readFile(where.path);
  };

  async locate(path: string): Promise<port.AssetLocation> {
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
    // Synchronous: a few metadata calls on a local directory, microseconds each, where the thread pool adds a
    // hand-off and a wake-up per call that cost more than the call on a loaded machine; a submit and the
    // relay's claim both wait on this. (An asset root on a network filesystem would block the event loop.)
    const root = realRootSync(this.#root);
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
      real = realpathSync.native(lexical);
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
    const info = statSync(real);
    if (!info.isFile()) throw new AssetNotFoundError(`Asset "${path}" is not a file`);
    // The resolved path, so a symlink swapped after this check cannot redirect the reader outside the root.
    return { kind: 'file', path: real };
  }

  /**
   * Every regular file under the root, sorted by path, at most `maxEntries`
   * (10,000 by default) so a mistaken root such as `/` cannot stall the API.
   * Symlinks are followed only while they stay inside the root.
   */
  async list(): Promise<readonly port.AssetInfo[]> {
    const root = realRootSync(this.#root);
    if (root === undefined) return [];
    const found: port.AssetInfo[] = [];
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

  /**
   * Write to a hidden temp file in the destination directory, then move it
   * into place: `link` (fails if the name exists) without `overwrite`,
   * `rename` with it. Either way readers never see a partial file, and a
   * symlink at the destination is replaced, never written through.
   * Directories are created one at a time and every symlinked one is
   * checked to stay inside the root before anything is written below it.
   */
  async put(
    path: string,
    bytes: Uint8Array,
    options: port.PutAssetOptions = {},
  ): Promise<port.PutAssetResult> {
    checkUploadPath(path);
    await mkdir(this.#root, { recursive: true });
    const root = await realpath(this.#root);
    const segments = path.split('/');
    const name = segments.pop() ?? path;
    let dir = root;
    for (const segment of segments) dir = await enterDirectory(root, dir, segment, path);

    const destination = join(dir, name);
    const temp = join(dir, `.upload-${randomUUID()}.tmp`);
    await writeFile(temp, bytes, { flag: 'wx', mode: 0o644 });
    try {
      let replaced = false;
      if (options.overwrite === true) {
        const existing = await lstat(destination).catch(() => undefined);
        if (existing?.isDirectory()) {
          throw new ValidationError(`Asset path "${path}" is a directory`, [
            { path: 'path', message: 'is a directory' },
          ]);
        }
        replaced = existing !== undefined;
        await rename(temp, destination);
      } else {
        await placeWithoutClobbering(temp, destination, path);
      }
      return uploaded(path, bytes, replaced);
    } finally {
      await rm(temp, { force: true });
    }
  }
}

/** The root's real path (the same libc realpath as the promise API's), or undefined when it does not exist. */
function realRootSync(root: string): string | undefined {
  try {
    return realpathSync.native(root);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw error;
  }
}

/** Step into (creating when absent) one directory of an upload path; a symlink must stay inside the root. */
async function enterDirectory(root: string, parent: string, segment: string, path: string): Promise<string> {
  const next = join(parent, segment);
  let info = await lstat(next).catch((error: unknown) => {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw error;
  });
  if (info === undefined) {
    await mkdir(next).catch((error: unknown) => {
      if (!isErrno(error, 'EEXIST')) throw error;
    });
    info = await lstat(next);
  }
  let real = next;
  if (info.isSymbolicLink()) {
    real = await realpath(next).catch(() => {
      throw new AssetNotFoundError(`Asset path "${path}": ${segment} is a dangling link`);
    });
    if (!isInside(root, real)) {
      throw new AssetOutsideRootError(`Asset path "${path}" resolves outside the asset root`);
    }
    info = await stat(real);
  }
  if (!info.isDirectory()) {
    throw new ValidationError(`Asset path "${path}": ${segment} is a file, not a directory`, [
      { path: 'path', message: `${segment} is a file, not a directory` },
    ]);
  }
  return real;
}

/** Hard-link the finished temp file into place; filesystems without hard links get an exclusive copy. */
async function placeWithoutClobbering(temp: string, destination: string, path: string): Promise<void> {
  const exists = () =>
    new AssetExistsError(`Asset "${path}" already exists; upload with overwrite to replace it`);
  try {
    await link(temp, destination);
    return;
  } catch (error) {
    if (isErrno(error, 'EEXIST')) throw exists();
    if (!isErrno(error, 'EPERM') && !isErrno(error, 'ENOTSUP') && !isErrno(error, 'EXDEV')) throw error;
  }
  try {
    await copyFile(temp, destination, constants.COPYFILE_EXCL);
  } catch (error) {
    if (isErrno(error, 'EEXIST')) throw exists();
    throw error;
  }
}

function isInside(root: string, candidate: string): boolean {
  const rel = relative(root, candidate);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && 'code' in error && error.code === code;
}
