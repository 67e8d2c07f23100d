import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShimError } from './errors.ts';

/**
 * The longest path a Unix socket can be bound at on Linux: `sun_path` holds
 * 108 bytes, its NUL included.
 */
const SOCKET_PATH_MAX = 107;
/**
 * What ssh adds to the control dir while it sets a master up: `/`, the
 * 10-character hash Ansible names the socket by, and the `.` and 16 random
 * characters of the temporary name ssh binds first.
 */
const SOCKET_NAME_LENGTH = 1 + 10 + 1 + 16;

/** A dir for this run's SSH control sockets, and whether the shim made it apart from its private dir. */
export interface SshControlDir {
  readonly dir: string;
  /** Made under the OS temp dir because the private dir's was too deep: the shim removes it at the end. */
  readonly apart: boolean;
}

/**
 * Where ssh keeps this run's control sockets (ANSIBLE_SSH_CONTROL_PATH_DIR):
 * `cp` in the shim's private dir when a socket's path there fits a Unix
 * socket address, else a private dir of its own (0700, made by mkdtemp)
 * under the OS temp dir. The private dir can be deep — a data dir under a
 * home directory, then the run's id and attempt, then the shim's own dir —
 * and a socket path over 107 bytes fails every SSH connection of the run
 * ("too long for Unix domain socket"). Only the sockets move; the key and
 * every other file stay in the private dir. Each run keeps its own dir
 * either way: two runs must never share a master authenticated with the
 * other's key.
 *
 * @example
 * const ssh = sshControlDir('/home/ops/remote-worker/.remote-worker/work/01J….1/rw-task-abc123');
 * // { dir: '/tmp/rw-ssh-Xy12Ab', apart: true }
 */
export function sshControlDir(privateDir: string, tempDir = tmpdir()): SshControlDir {
  const inPrivate = join(privateDir, 'cp');
  if (fits(inPrivate)) return { dir: inPrivate, apart: false };
  const candidate = join(tempDir, 'rw-ssh-XXXXXX');
  if (!fits(candidate)) {
    throw new ShimError(
      `the SSH control socket dir would be too long for a Unix socket both in the run's work dir (${inPrivate}) ` +
        `and in the temp dir (${tempDir}): give the relay a shorter work dir or TMPDIR`,
    );
  }
  return { dir: mkdtempSync(join(tempDir, 'rw-ssh-')), apart: true };
}

const fits = (dir: string): boolean => Buffer.byteLength(dir) + SOCKET_NAME_LENGTH <= SOCKET_PATH_MAX;
