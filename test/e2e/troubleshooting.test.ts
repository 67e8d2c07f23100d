import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Sshd, startSshd } from '../support/sshd.ts';
import {
  type Api,
  allLogs,
  client,
  LOCALHOST_TARGET,
  type LocalProcess,
  newDataDir,
  startLocal,
  waitForState,
} from './harness.ts';

/**
 * The seeds' troubleshooting messages as run reasons, from real plays:
 * local mode (process executor, Debian's ansible-playbook) against a real
 * OpenSSH daemon that authorises one key, and a WinRM target on a machine
 * whose ansible has no pywinrm. The causes this machine cannot produce
 * (WinRM refused needs pywinrm; a cluster API behind an allow-list) are
 * checked from recorded output in test/unit/domain/troubleshooting.test.ts.
 */
describe('troubleshooting messages as run reasons (real plays)', () => {
  let sshd: Sshd;
  let local: LocalProcess;
  let api: Api;
  let sshArgs: string;

  let assets: string;

  beforeAll(async () => {
    sshd = await startSshd();
    // A play that really connects (hello/site.yml only prints, on the controller).
    assets = mkdtempSync(join(tmpdir(), 'rw-trouble-assets-'));
    mkdirSync(join(assets, 'trouble'));
    writeFileSync(
      join(assets, 'trouble/ping.yml'),
      '- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.ping:\n',
    );
    const dataDir = newDataDir();
    const secrets = join(dataDir, 'secrets.json');
    writeFileSync(secrets, JSON.stringify({ 'aws-ssh-key': sshd.badKey, 'gcp-ssh-key': sshd.goodKey }), {
      mode: 0o600,
    });
    chmodSync(secrets, 0o600);
    local = await startLocal(dataDir, {
      LOCAL_STORAGE_PATH: assets,
      ANSIBLE_SSH_KEY_SM_NAME: 'aws-ssh-key',
      GCP_SSH_KEY_SECRET_NAME: 'gcp-ssh-key',
      VSPHERE_ENABLED: 'true',
      VSPHERE_HOST: '127.0.0.1',
      VSPHERE_USER: sshd.user,
    });
    api = client(local.url, local.token);
    // The daemon's host key is trusted through a known_hosts file, not by turning checking off.
    sshArgs = `-o UserKnownHostsFile=${sshd.knownHosts} -o IdentitiesOnly=yes`;
    const vm = (cloud: string) => ({
      kind: 'vm',
      cloud,
      name: `${cloud} vm`,
      address: '127.0.0.1',
      port: sshd.port,
      sshUser: sshd.user,
    });
    for (const [id, body] of Object.entries({
      'aws-vm': vm('aws'),
      'gcp-vm': vm('gcp'),
      'win-vm': {
        kind: 'vm',
        cloud: 'local',
        name: 'win',
        address: '127.0.0.1',
        port: 5985,
        connection: 'winrm',
      },
    })) {
      expect((await api('PUT', `/targets/${id}`, body)).status).toBe(201);
    }
  }, 60_000);

  afterAll(async () => {
    await local?.stop();
    await sshd?.stop();
    if (assets !== undefined) rmSync(assets, { recursive: true, force: true });
  });

  const runOn = async (targetId: string, extraVars: Record<string, unknown> = {}) => {
    const submitted = await api('POST', '/runs', {
      kind: 'vm',
      targetId,
      asset: 'trouble/ping.yml',
      extraVars: { ansible_ssh_common_args: sshArgs, ...extraVars },
    });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
    return waitForState(api, submitted.body.id, 'terminal', 60_000);
  };

  it('reaches the daemon with the authorised key: the set-up is sound', async () => {
    const run = await runOn('gcp-vm');

    expect(run.state, run.reason).toBe('succeeded');
    expect(await allLogs(api, run.id)).toMatch(/ok: \[gcp-vm\]/);
    // The run's SSH master is told to exit at the end, not left holding its connection for ControlPersist's 60 s.
    await vi.waitFor(() => expect(connectionsTo(sshd.port)).toBe(0), { timeout: 10_000, interval: 100 });
  }, 90_000);

  it('says SSH authentication failed, with the AWS secret hint, when the key is refused', async () => {
    const run = await runOn('aws-vm');
    const logs = await allLogs(api, run.id);

    expect(logs).toContain('Permission denied (publickey)');
    expect(run.state).toBe('failed');
    expect(run.reason).toMatch(
      /^SSH authentication failed on cloud target \(AWS\) — verify ansible_ssh_key_sm_name is set and the IAM role has secretsmanager:GetSecretValue on that secret\. The task exited with code 4: fatal: \[aws-vm\]: UNREACHABLE!/,
    );
    expect(run.reason).not.toContain('OPENSSH PRIVATE KEY');
  }, 90_000);

  it('says SSH to the ESXi host must be enabled and the password must work, on the vsphere group', async () => {
    const run = await runOn('vsphere', {
      ansible_port: sshd.port,
      ansible_ssh_private_key_file: '/nonexistent/no-key',
    });

    expect(run.state).toBe('failed');
    expect(run.reason).toMatch(
      /^SSH authentication failed \(vSphere\) — the stored password must work for SSH \(not just the management API\), and SSH must be enabled on the ESXi host/,
    );
  }, 90_000);

  it('says pywinrm is not installed when a WinRM play runs where Ansible has no pywinrm', async () => {
    const run = await runOn('win-vm');

    // The shim's preflight finds it before Ansible would (Ansible's own words are in the unit test).
    expect(await allLogs(api, run.id)).toContain('pywinrm is not installed for /usr/bin/python3');
    expect(run.state).toBe('failed');
    expect(run.reason).toMatch(
      /^"pywinrm is not installed" — the runner lacks pywinrm .*\. The task exited with code 127/,
    );
  }, 90_000);
});

describe('"docker: command not found" as the refusal, from local mode without a docker CLI', () => {
  it('refuses a run on the local runner with the seeds’ message and the socket-mount fix', async () => {
    const local = await startLocal(newDataDir(), {
      LOCAL_EXECUTOR: 'docker',
      LOCAL_DOCKER_CLI: '/nonexistent/docker',
    });
    try {
      const api = client(local.url, local.token);
      await api('PUT', '/targets/localhost', LOCALHOST_TARGET);

      const { status, body } = await api('POST', '/runs', {
        kind: 'vm',
        targetId: 'localhost',
        asset: 'hello/site.yml',
      });

      // A refused run is recorded and answered 200 (nothing was queued).
      expect(status).toBe(200);
      expect(body.state).toBe('refused');
      expect(body.reason).toMatch(
        /^No relay is reachable to run this on the local runner: LOCAL_EXECUTOR is docker but \/nonexistent\/docker: command not found\. "docker: command not found" — the Docker socket is not mounted .*\/var\/run\/docker\.sock bind mount/,
      );
    } finally {
      await local.stop();
    }
  }, 60_000);
});

/** Established TCP connections from this host to 127.0.0.1:`port` (the client ends, from /proc/net/tcp). */
function connectionsTo(port: number): number {
  const remote = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((cols) => cols[2] === remote && cols[3] === '01').length;
}
