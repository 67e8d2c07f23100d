import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { NotFoundError, SettingsInvalidError } from '../../domain/errors.ts';
import type { SecretSource } from '../../ports/secret-source.ts';

interface Snapshot {
  readonly mtimeMs: number;
  readonly size: number;
  readonly ino: number;
  readonly values: ReadonlyMap<string, string>;
}

/**
 * Local-mode SecretSource: `secrets.json` (name → value) in the data
 * directory. A missing file means no secrets. The file is re-read when it
 * changes, so an operator can add a secret without a restart.
 *
 * A file readable by group or others is refused rather than used: a secret
 * that other local users could read is already leaked, and failing loudly is
 * the only way the operator learns of it.
 *
 * @example
 * const secrets = new FileSecretSource({ dataDir: '.remote-worker' });
 * const password = await secrets.get('db-admin-password'); // NotFoundError naming the secret when absent
 */
export class FileSecretSource implements SecretSource {
  readonly path: string;
  #snapshot: Snapshot | undefined;

  constructor(options: { dataDir: string }) {
    this.path = join(options.dataDir, 'secrets.json');
  }

  async get(name: string): Promise<string> {
    const value = (await this.#load()).get(name);
    if (value === undefined) {
      throw new NotFoundError(`Secret "${name}" is not defined in ${this.path}`);
    }
    return value;
  }

  async #load(): Promise<ReadonlyMap<string, string>> {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(this.path, 'r');
    } catch (error) {
      if (isErrno(error, 'ENOENT')) {
        this.#snapshot = undefined;
        return new Map();
      }
      throw error;
    }
    try {
      // fstat on the opened handle, so the file checked is the file read even if it is swapped meanwhile.
      const stat = await handle.stat();
      if (process.platform !== 'win32' && (stat.mode & 0o077) !== 0) {
        const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
        throw this.#invalid(`mode ${mode} lets group or others read it; run \`chmod 600 ${this.path}\``);
      }
      const cached = this.#snapshot;
      if (
        cached !== undefined &&
        cached.mtimeMs === stat.mtimeMs &&
        cached.size === stat.size &&
        cached.ino === stat.ino
      ) {
        return cached.values;
      }
      const values = this.#parse(await handle.readFile('utf8'));
      this.#snapshot = { mtimeMs: stat.mtimeMs, size: stat.size, ino: stat.ino, values };
      return values;
    } finally {
      await handle.close();
    }
  }

  #parse(text: string): ReadonlyMap<string, string> {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      // V8's parse errors quote the text around the fault, which may be a secret value.
      throw this.#invalid('is not valid JSON');
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      throw this.#invalid('must be a JSON object of secret name to string value');
    }
    const values = new Map<string, string>();
    for (const [key, value] of Object.entries(data)) {
      if (typeof value !== 'string') throw this.#invalid(`secret "${key}" must be a string`);
      values.set(key, value);
    }
    return values;
  }

  #invalid(message: string): SettingsInvalidError {
    return new SettingsInvalidError([{ path: this.path, message }]);
  }
}

function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && 'code' in error && error.code === code;
}
