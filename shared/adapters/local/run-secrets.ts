import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { NotFoundError, ValidationError } from '../../domain/errors.ts';
import type { RunSecretStore } from '../../ports/run-secret-store.ts';
import type { SecretSource } from '../../ports/secret-source.ts';

const PREFIX = 'run-secret:';
const RUN_ID = /^[A-Za-z0-9_-]{1,128}$/;
const KEY = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * Local mode's per-run secrets: one 0600 file per value under
 * `<data dir>/run-secrets/<run id>/<key>` (directories 0700), named
 * `run-secret:<run id>/<key>`.
 *
 * Files rather than a table in the SQLite file: the run database, its WAL
 * and any copy an operator takes of it stay free of secrets (a deleted SQLite
 * row lingers in free pages and the WAL until they are reused), and these
 * files get the same protection as `secrets.json`, the store local mode
 * already trusts. Files rather than memory: a queued run keeps its password
 * across a restart (even `kill -9`), and `sweep` removes what a crash left.
 *
 * @example
 * const runSecrets = new FileRunSecretStore({ dataDir });
 * const name = await runSecrets.put(runId, 'ansible_password', value); // 'run-secret:<runId>/ansible_password'
 * await runSecrets.get(name);
 * await runSecrets.deleteFor(runId, ['ansible_password']);
 */
export class FileRunSecretStore implements RunSecretStore, SecretSource {
  readonly root: string;

  constructor(options: { readonly dataDir: string }) {
    this.root = join(options.dataDir, 'run-secrets');
  }

  owns(name: string): boolean {
    return name.startsWith(PREFIX);
  }

  async put(runId: string, key: string, value: string): Promise<string> {
    const dir = this.#runDir(runId);
    checkKey(key);
    await mkdir(this.root, { recursive: true, mode: 0o700 });
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // Written beside its final name and renamed, so a reader never sees half a value.
    const temp = join(dir, `.${key}.${randomBytes(6).toString('hex')}`);
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(value, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, join(dir, key));
    return `${PREFIX}${runId}/${key}`;
  }

  async get(name: string): Promise<string> {
    const parsed = parseName(name);
    if (parsed === undefined) throw new NotFoundError(`Secret "${name}" is not a per-run secret name`);
    try {
      return await readFile(join(this.#runDir(parsed.runId), parsed.key), 'utf8');
    } catch (error) {
      if (isErrno(error, 'ENOENT')) {
        throw new NotFoundError(`Per-run secret "${name}" does not exist (the run has ended)`);
      }
      throw error;
    }
  }

  async deleteFor(runId: string, keys: readonly string[]): Promise<void> {
    const dir = this.#runDir(runId);
    for (const key of keys) {
      checkKey(key);
      await rm(join(dir, key), { force: true });
    }
    await rmdir(dir).catch(() => {}); // only when empty: another key may still be held
  }

  /** Run ids that hold at least one per-run secret here. */
  async runIds(): Promise<string[]> {
    try {
      return (await readdir(this.root)).filter((name) => RUN_ID.test(name));
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return [];
      throw error;
    }
  }

  /**
   * Remove every value of the runs `isDone` says have ended (or never
   * existed): what a crash between writing a value and recording or ending
   * its run left behind. Returns the run ids swept.
   */
  async sweep(isDone: (runId: string) => Promise<boolean>): Promise<string[]> {
    const swept: string[] = [];
    for (const runId of await this.runIds()) {
      if (!(await isDone(runId))) continue;
      await rm(this.#runDir(runId), { recursive: true, force: true });
      swept.push(runId);
    }
    return swept;
  }

  #runDir(runId: string): string {
    if (!RUN_ID.test(runId)) throw new ValidationError(`"${runId}" is not a run id`);
    return join(this.root, runId);
  }
}

/**
 * Local mode's SecretSource: per-run names from the run secret store, every
 * other name from `secrets.json`.
 *
 * @example
 * const secrets = withRunSecrets(new FileSecretSource({ dataDir }), new FileRunSecretStore({ dataDir }));
 */
export function withRunSecrets(
  stored: SecretSource,
  runSecrets: SecretSource & Pick<RunSecretStore, 'owns'>,
): SecretSource {
  return { get: (name) => (runSecrets.owns(name) ? runSecrets.get(name) : stored.get(name)) };
}

function parseName(name: string): { runId: string; key: string } | undefined {
  if (!name.startsWith(PREFIX)) return undefined;
  const [runId, key, ...rest] = name.slice(PREFIX.length).split('/');
  if (runId === undefined || key === undefined || rest.length > 0) return undefined;
  return RUN_ID.test(runId) && KEY.test(key) ? { runId, key } : undefined;
}

function checkKey(key: string): void {
  if (!KEY.test(key)) throw new ValidationError(`"${key}" is not a variable name`);
}

function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && 'code' in error && error.code === code;
}
