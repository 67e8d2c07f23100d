import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';

/** Debian's openssh-server daemon (bin/prerequisites/sets.ts). */
const SSHD = join('/usr/sbin', 'sshd');

export interface Sshd {
  readonly port: number;
  /** The account the daemon lets in: whoever runs the suite. */
  readonly user: string;
  /** Private key whose public half is authorised. */
  readonly goodKey: string;
  /** A private key the daemon does not know. */
  readonly badKey: string;
  /** A known_hosts file holding the daemon's host key for `[127.0.0.1]:port`. */
  readonly knownHosts: string;
  stop(): Promise<void>;
}

const keygen = (path: string) => execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path]);

/**
 * A real OpenSSH daemon on 127.0.0.1 that accepts one key and nothing else
 * (no password, no keyboard-interactive), for plays that must really fail
 * to authenticate. Privilege separation needs /run/sshd, which the package
 * makes only when its service starts.
 */
export async function startSshd(): Promise<Sshd> {
  const dir = mkdtempSync(join(tmpdir(), 'rw-sshd-'));
  for (const name of ['host_key', 'good', 'bad']) keygen(join(dir, name));
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'good.pub')), { mode: 0o600 });
  const port = await freePort();
  writeFileSync(
    join(dir, 'sshd_config'),
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host_key')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'UsePAM no',
      'StrictModes no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      '',
    ].join('\n'),
  );
  const hostKey = readFileSync(join(dir, 'host_key.pub'), 'utf8').split(' ').slice(0, 2).join(' ');
  writeFileSync(join(dir, 'known_hosts'), `[127.0.0.1]:${port} ${hostKey}\n`);
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });

  let log = '';
  const proc: ChildProcess = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  proc.stderr?.on('data', (d: Buffer) => {
    log += d.toString();
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  await waitForPort(port, () => (proc.exitCode === null ? undefined : `sshd exited: ${log}`));
  return {
    port,
    user: userInfo().username,
    goodKey: readFileSync(join(dir, 'good'), 'utf8'),
    badKey: readFileSync(join(dir, 'bad'), 'utf8'),
    knownHosts: join(dir, 'known_hosts'),
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number, failed: () => string | undefined): Promise<void> {
  const until = Date.now() + 10_000;
  for (;;) {
    const why = failed();
    if (why !== undefined) throw new Error(why);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > until) throw new Error(`sshd did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
