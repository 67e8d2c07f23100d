import { writeFileSync as fsWriteFileSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { EXIT_FILE, type ExitRecord } from '../../shared/domain/shim-protocol.ts';
import { ShimError } from './errors.ts';

/** Create a 0600 file; `wx` after removal so an existing file's wider mode is never kept. */
export function writePrivateFile(path: string, data: string): void {
  rmSync(path, { force: true });
  fsWriteFileSync(path, data, { mode: 0o600, flag: 'wx' });
}

/** Write `exit.json` in `dir`; the rename makes the record appear whole or not at all. */
export function writeExitRecord(dir: string, record: ExitRecord): void {
  const file = join(dir, EXIT_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  writePrivateFile(tmp, `${JSON.stringify(record)}\n`);
  renameSync(tmp, file);
}

/** A kubeconfig given as a path, read so its content can be copied into a container's mount. */
export function readKubeconfigFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new ShimError(`cannot read the kubeconfig ${path}: ${(error as Error).message}`);
  }
}
