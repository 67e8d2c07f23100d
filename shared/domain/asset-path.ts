import { hasHiddenCharacter } from './display-text.ts';
import { AssetNotFoundError, AssetOutsideRootError, ValidationError } from './errors.ts';
import { assetTypeOf } from './task.ts';

/**
 * Rules for the path an uploaded asset is stored under. Paths are keys on
 * every backend (a file under the local root, an S3/Blob/GCS object key), so
 * they are kept portable: `/`-separated, relative, no `.`/`..` segments, no
 * hidden segments (`.git`, `.env` are never served), printable characters
 * only (no controls, bidirectional controls or invisible format characters),
 * and an extension some wrapper knows how to run.
 */
export const ASSET_EXTENSIONS = ['.yml', '.yaml', '.sh', '.ps1', '.rpm', '.deb'] as const;

export const MAX_ASSET_PATH_LENGTH = 1024;
const MAX_SEGMENT_LENGTH = 255;

export interface AssetPathProblem {
  /** `outside_root`: the path would leave the storage root; `invalid`: anything else. */
  readonly code: 'outside_root' | 'invalid';
  readonly message: string;
}

/**
 * Why `path` cannot name an uploaded asset, or undefined when it can.
 *
 * @example
 * assetPathProblem('hello/site.yml') // undefined
 * assetPathProblem('../etc/passwd')  // { code: 'outside_root', … }
 */
export function assetPathProblem(path: string): AssetPathProblem | undefined {
  const invalid = (message: string): AssetPathProblem => ({ code: 'invalid', message });
  if (path.length === 0) return invalid('is empty');
  if (path.length > MAX_ASSET_PATH_LENGTH)
    return invalid(`is longer than ${MAX_ASSET_PATH_LENGTH} characters`);
  // The same rule as target names: a path is read in listings and logs, and `evil\u202Elmy.sh` must not
  // pass for `evilhs.yml`. Controls (NUL, newlines) are among the characters refused.
  if (hasHiddenCharacter(path)) {
    return invalid(
      'contains a control character, a bidirectional control or an invisible format character; use printable characters only',
    );
  }
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) {
    return { code: 'outside_root', message: 'is absolute; give a path relative to the asset root' };
  }
  if (path.includes('\\')) return invalid('uses a backslash; separate directories with /');
  const segments = path.split('/');
  if (segments.includes('..')) {
    return { code: 'outside_root', message: 'contains a .. segment, which would leave the asset root' };
  }
  for (const segment of segments) {
    if (segment === '') return invalid('has an empty segment (a leading, trailing or doubled /)');
    if (segment === '.') return invalid('contains a . segment');
    if (segment.startsWith('.'))
      return invalid(`has a hidden segment (${segment}); hidden files are never served`);
    if (segment.length > MAX_SEGMENT_LENGTH)
      return invalid(`has a segment longer than ${MAX_SEGMENT_LENGTH} characters`);
    if (segment.trim() !== segment) return invalid('has a segment that starts or ends with a space');
  }
  if (assetTypeOf(path) === undefined) {
    return invalid(`must end in one of ${ASSET_EXTENSIONS.join(' ')}`);
  }
  return undefined;
}

/** `a\b` and `a/b` alike: a Windows-style path must not slip a `..` past the check. */
const segmentsOf = (path: string): string[] => path.split(/[/\\]/);

/**
 * Why a relative asset path may not be looked up in an object store (S3, Azure
 * Blob, GCS), as the error to throw; undefined when it is fine. Checked before
 * any request, so a traversal attempt never reaches the backend.
 */
export function objectPathProblem(path: string): Error | undefined {
  if (path.includes('\0')) {
    return new ValidationError('Asset path must not contain NUL', [
      { path: 'asset', message: 'contains NUL' },
    ]);
  }
  if (path.length === 0) return new AssetNotFoundError('Asset path is empty');
  if (path.startsWith('/') || path.startsWith('\\') || /^[A-Za-z]:/.test(path)) {
    return new AssetOutsideRootError(
      `Asset path "${path}" is absolute; give a path relative to the asset root`,
    );
  }
  const segments = segmentsOf(path);
  if (segments.includes('..')) {
    return new AssetOutsideRootError(`Asset path "${path}" resolves outside the asset root`);
  }
  // Hidden files (`.git/…`, `.env`) are never served, as in the local store; `a//b` names no real file.
  if (segments.some((s) => s.startsWith('.') || s === '')) {
    return new AssetNotFoundError(`Asset "${path}" does not exist`);
  }
  return undefined;
}
