import { cp, mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Settings } from '../../shared/config/settings.ts';

/** The playbooks a user can copy (README walkthrough: `hello/site.yml`), shipped in the repository. */
export const EXAMPLE_ASSETS = fileURLToPath(new URL('../../examples/playbooks', import.meta.url));

/** The asset root's directory name under the data directory when `local_storage_path` is unset. */
const DEFAULT_ASSET_DIR = 'assets';

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return false;
      throw error;
    },
  );

/**
 * Where local mode keeps its assets: `local_storage_path` when the operator
 * set it (used as it is, never seeded), else `<dataDir>/assets`, outside the
 * source tree, so `POST /assets` never writes into the checkout. The default
 * root is made on first start from the examples, so the README walkthrough
 * runs at once; once it exists it is the operator's and is never touched
 * again, even when the examples change or files are deleted from it.
 *
 * The copy goes to a hidden sibling and is renamed into place: a crash
 * half-way leaves no half-seeded root that would then count as the
 * operator's.
 *
 * @example
 * const root = await localAssetRoot({ settings, cwd: process.cwd(), dataDir }); // '/…/.remote-worker/assets'
 */
export async function localAssetRoot(options: {
  readonly settings: Pick<Settings, 'local_storage_path'>;
  readonly cwd: string;
  readonly dataDir: string;
  /** What a new default root starts with; the repository's examples unless a test says otherwise. */
  readonly seedFrom?: string;
}): Promise<string> {
  const configured = options.settings.local_storage_path;
  if (configured !== undefined) return resolve(options.cwd, configured);

  const root = join(options.dataDir, DEFAULT_ASSET_DIR);
  if (await exists(root)) return root;
  await mkdir(dirname(root), { recursive: true, mode: 0o700 });
  const partial = join(dirname(root), `.${DEFAULT_ASSET_DIR}-seeding-${process.pid}`);
  await rm(partial, { recursive: true, force: true });
  const seed = options.seedFrom ?? EXAMPLE_ASSETS;
  if (await exists(seed)) await cp(seed, partial, { recursive: true, errorOnExist: true, force: false });
  else await mkdir(partial, { mode: 0o700 });
  try {
    await rename(partial, root);
  } catch (error) {
    await rm(partial, { recursive: true, force: true });
    // Another process seeded it first (two starts at once): theirs stands.
    if (
      (error as NodeJS.ErrnoException).code !== 'ENOTEMPTY' &&
      (error as NodeJS.ErrnoException).code !== 'EEXIST'
    )
      throw error;
  }
  return root;
}
