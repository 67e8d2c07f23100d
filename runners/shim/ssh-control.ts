import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
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

/** How long one `ssh -O exit` may take before the shim stops waiting for it. */
const MASTER_EXIT_TIMEOUT_MS = 2_000;

/**
 * Ask every SSH master with a socket in `dir` to exit, and wait for their
 * answers; resolves to how many sockets there were. Ansible starts its
 * masters with `ControlPersist=60s`, so on the host (the process executor)
 * each run's master would otherwise keep its authenticated connection to the
 * target open for a minute after the run, with nothing left that could use
 * it: the socket goes with the run's dir. A burst of runs against one VM
 * would hold as many idle connections to it. In a container they end with
 * the container. Best effort: an ssh that is missing, or a master that is
 * gone already or does not answer within 2 s, is left as it is (a stopped
 * run's shim then still cleans up inside its supervisor's grace).
 *
 * @example
 * await closeSshMasters(ssh.dir); // before the dir is removed
 */
export async function closeSshMasters(dir: string, ssh = 'ssh'): Promise<number> {
  let sockets: string[];
  try {
    sockets = readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isSocket())
      .map((entry) => join(dir, entry.name));
  } catch {
    return 0;
  }
  await Promise.all(
    sockets.map(
      (socket) =>
        new Promise<void>((resolve) => {
          // The path quoted, and % doubled: ssh expands %-tokens in ControlPath. The host is never contacted.
          const path = `"${socket.replaceAll('%', '%%')}"`;
          execFile(
            ssh,
            ['-o', `ControlPath=${path}`, '-O', 'exit', 'remote-worker-master'],
            { timeout: MASTER_EXIT_TIMEOUT_MS },
            () => resolve(),
          );
        }),
    ),
  );
  return sockets.length;
}
