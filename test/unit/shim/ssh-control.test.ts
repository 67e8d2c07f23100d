import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ShimError } from '../../../runners/shim/errors.ts';
import { closeSshMasters, sshControlDir } from '../../../runners/shim/ssh-control.ts';

/** What ssh binds while it sets a master up in `dir`: the 10-character hash, then `.` and 16 random characters. */
const socketIn = (dir: string) => join(dir, 'a448b908de.nAjpGPlk8VjO3Q6a');

describe('sshControlDir', () => {
  let temp: string;
  beforeEach(() => {
    temp = mkdtempSync(join(tmpdir(), 'rw-ssh-test-'));
  });
  afterEach(() => rmSync(temp, { recursive: true, force: true }));

  it("keeps the sockets in the private dir's cp when their path fits a Unix socket address", () => {
    const privateDir = join(temp, 'work', 'run-1.1', 'rw-task-abc123');

    const ssh = sshControlDir(privateDir, temp);

    expect(ssh).toEqual({ dir: join(privateDir, 'cp'), apart: false });
    expect(Buffer.byteLength(socketIn(ssh.dir))).toBeLessThanOrEqual(107);
  });

  it('makes a private dir of its own under the temp dir when the private dir is too deep', () => {
    // A data dir under a home directory, the run's id and attempt, the shim's own dir: 100 bytes and more.
    const privateDir = join(
      '/home/operator/projects/remote-worker/.remote-worker/work',
      '01M8XGB2WYT76TJ1AY4CEKAV7Q.1',
      'rw-task-CLpb3p',
    );
    expect(Buffer.byteLength(socketIn(join(privateDir, 'cp')))).toBeGreaterThan(107);

    const ssh = sshControlDir(privateDir, temp);

    expect(ssh.apart).toBe(true);
    expect(ssh.dir.startsWith(join(temp, 'rw-ssh-'))).toBe(true);
    expect(existsSync(ssh.dir)).toBe(true);
    expect(statSync(ssh.dir).mode & 0o777).toBe(0o700);
    expect(Buffer.byteLength(socketIn(ssh.dir))).toBeLessThanOrEqual(107);
    // Each call its own dir: two runs never share one.
    expect(sshControlDir(privateDir, temp).dir).not.toBe(ssh.dir);
  });

  it('refuses, naming both places, when the temp dir is too deep as well', () => {
    const deep = join(temp, 'x'.repeat(90));
    const privateDir = join(deep, 'rw-task-abc123');

    expect(() => sshControlDir(privateDir, deep)).toThrow(ShimError);
    expect(() => sshControlDir(privateDir, deep)).toThrow(/too long for a Unix socket.*work dir.*temp dir/);
  });
});

describe('closeSshMasters', () => {
  let temp: string;
  const servers: Server[] = [];
  beforeEach(() => {
    temp = mkdtempSync(join(tmpdir(), 'rw-ssh-test-'));
  });
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
    rmSync(temp, { recursive: true, force: true });
  });
  const listenAt = (path: string) =>
    new Promise<void>((resolve) => {
      const server = createServer().listen(path, () => resolve());
      servers.push(server);
    });
  /** An `ssh` that records its arguments, one call per line. */
  const recordingSsh = () => {
    const bin = join(temp, 'ssh');
    writeFileSync(bin, `#!/bin/sh\necho "$*" >> ${join(temp, 'calls')}\n`, { mode: 0o755 });
    return bin;
  };

  it('asks the master behind each socket in the dir to exit, and nothing else', async () => {
    const dir = join(temp, 'cp');
    mkdirSync(dir);
    await listenAt(join(dir, 'a448b908de'));
    await listenAt(join(dir, '5%c0ffee00'));
    writeFileSync(join(dir, 'not-a-socket'), '');

    expect(await closeSshMasters(dir, recordingSsh())).toBe(2);

    const calls = readFileSync(join(temp, 'calls'), 'utf8').trim().split('\n').sort();
    expect(calls).toEqual([
      `-o ControlPath="${join(dir, '5%%c0ffee00')}" -O exit remote-worker-master`,
      `-o ControlPath="${join(dir, 'a448b908de')}" -O exit remote-worker-master`,
    ]);
  });

  it('resolves when there is no dir, or no ssh to ask with', async () => {
    expect(await closeSshMasters(join(temp, 'never-made'), recordingSsh())).toBe(0);
    await listenAt(join(temp, 'a448b908de'));
    expect(await closeSshMasters(temp, join(temp, 'no-such-ssh'))).toBe(1);
  });
});
