import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containersLabelled, ensureAnsibleImage, inspectContainer } from '../support/ansible-image.ts';
import {
  type Api,
  allLogs,
  client,
  everythingStoredIn,
  LOCALHOST_TARGET,
  type LocalProcess,
  newDataDir,
  REPO,
  startLocal,
  waitFor,
  waitForState,
} from './harness.ts';

/**
 * Local mode over HTTP with the docker executor on a real engine: podman as
 * the docker CLI (`LOCAL_DOCKER_CLI=podman`), and as `ansible_local_image` an
 * image that has ansible-playbook and nothing of ours (no Node, no shim:
 * test/fixtures/images/ansible-no-shim). The plays run inside its containers;
 * the shim runs on this side.
 */
let image: string;
let markerDir: string;
beforeAll(() => {
  image = ensureAnsibleImage();
  markerDir = mkdtempSync(join(tmpdir(), 'rw-markers-'));
}, 600_000);
afterAll(() => {
  rmSync(markerDir, { recursive: true, force: true });
});

const env = () => ({
  LOCAL_EXECUTOR: 'docker',
  LOCAL_DOCKER_CLI: 'podman',
  LOCAL_DOCKER_VOLUMES: `${markerDir}:/markers`,
  ANSIBLE_LOCAL_IMAGE: image,
  LOCAL_STORAGE_PATH: join(REPO, 'test/fixtures/playbooks'),
});

const containersOf = (runId: string) => containersLabelled(`remote-worker.run-id=${runId}`);

async function submit(api: Api, body: Record<string, unknown>): Promise<string> {
  const res = await api('POST', '/runs', { kind: 'vm', targetId: 'localhost', ...body });
  expect(res.status).toBe(202);
  return res.body.id as string;
}

/** Every process's command line on this host, container processes included. */
function allCommandLines(): string {
  let text = '';
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      text += `${readFileSync(`/proc/${pid}/cmdline`, 'latin1')}\n`;
    } catch {
      // It ended while we looked.
    }
  }
  return text;
}

const count = (text: string, what: string) => text.split(what).length - 1;

describe('the docker executor in local mode (podman, an image without the shim)', () => {
  let local: LocalProcess;
  let api: Api;
  let dataDir: string;
  const secretValue = 'pw-canary-5c81e0d2a9';

  beforeAll(async () => {
    dataDir = newDataDir();
    writeFileSync(join(dataDir, 'secrets.json'), JSON.stringify({ 'db-password': secretValue }), {
      mode: 0o600,
    });
    local = await startLocal(dataDir, env());
    api = client(local.url, local.token);
    await api('PUT', '/targets/localhost', LOCALHOST_TARGET);
  }, 60_000);
  afterAll(async () => {
    await local?.stop();
  });

  it('runs a real playbook in a container and returns its output', async () => {
    const id = await submit(api, { asset: 'echo-var.yml', extraVars: { greeting: 'from-a-container' } });

    const run = await waitForState(api, id, 'terminal', 60_000);
    const logs = await allLogs(api, id);

    expect(run.state).toBe('succeeded');
    expect(run.exitCode).toBe(0);
    expect(run.launch.handle).toMatch(new RegExp(`^relay:local/docker:rw-${id.toLowerCase()}/process:`));
    expect(logs).toContain('(docker executor)');
    expect(logs).toContain(`in container rw-${id.toLowerCase()} from image ${image}`);
    expect(logs).toContain(
      '-i /ansible/inventory.json -e @/ansible/extra-vars.json /ansible/assets/echo-var.yml',
    );
    expect(logs).toContain('"msg": "greeting is from-a-container"');
    expect(containersOf(id)).toEqual([]);
  }, 90_000);

  it('ends a failing play failed with its exit code', async () => {
    const id = await submit(api, { asset: 'fail.yml', extraVars: { reason: 'on purpose' } });

    const run = await waitForState(api, id, 'terminal', 60_000);

    expect(run.state).toBe('failed');
    expect(run.exitCode).toBe(2);
    expect(run.reason).toContain('exited with code 2');
    expect(await allLogs(api, id)).toContain('deliberate failure: on purpose');
    expect(containersOf(id)).toEqual([]);
  }, 90_000);

  it('cancel stops the container and leaves none behind', async () => {
    const id = await submit(api, { asset: 'pause.yml', extraVars: { pause_seconds: 120 } });
    await waitFor(
      'the container to run',
      async () => (containersOf(id).length === 1 ? true : undefined),
      60_000,
    );
    await waitFor('the play to start', async () =>
      (await allLogs(api, id)).includes('started, marker') ? true : undefined,
    );

    const started = Date.now();
    expect((await api('POST', `/runs/${id}/cancel`)).status).toBeLessThan(300);
    const run = await waitForState(api, id, 'terminal', 60_000);

    expect(run.state).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(containersOf(id)).toEqual([]);
    expect(await allLogs(api, id)).not.toContain('finished');
  }, 120_000);

  it('a timeout stops the container and leaves none behind', async () => {
    const id = await submit(api, {
      asset: 'pause.yml',
      extraVars: { pause_seconds: 120 },
      timeoutSeconds: 4,
    });
    await waitFor(
      'the container to run',
      async () => (containersOf(id).length === 1 ? true : undefined),
      60_000,
    );

    const run = await waitForState(api, id, 'terminal', 60_000);

    expect(run.state).toBe('timed_out');
    expect(containersOf(id)).toEqual([]);
    expect(await allLogs(api, id)).not.toContain('finished');
  }, 120_000);

  it("keeps a secret binding's value out of the container config, every command line, the logs and the data dir", async () => {
    const id = await submit(api, {
      asset: 'secret-slow.yml',
      extraVars: { expected_sha1: createHash('sha1').update(secretValue).digest('hex'), pause_seconds: 4 },
      secrets: [{ var: 'db_password', secret: 'db-password' }],
    });
    const name = `rw-${id.toLowerCase()}`;
    await waitFor(
      'the container to run',
      async () => (containersOf(id).length === 1 ? true : undefined),
      60_000,
    );
    await waitFor('the play to use the secret', async () =>
      (await allLogs(api, id)).includes('the password is') ? true : undefined,
    );

    // While it runs: the engine's record of the container, and every process on the host.
    const inspected = inspectContainer(name);
    const commandLines = allCommandLines();
    const run = await waitForState(api, id, 'terminal', 60_000);
    const logs = await allLogs(api, id);

    expect(inspected).toContain(image); // the real container, not an empty answer
    expect(inspected).not.toContain(secretValue);
    expect(commandLines).toContain('ansible-playbook');
    expect(commandLines).not.toContain(secretValue);
    expect(run.state).toBe('succeeded'); // the assert in the play saw the value intact
    expect(logs).toContain('the password is ********');
    expect(logs).not.toContain(secretValue);
    expect(JSON.stringify(run)).not.toContain(secretValue);
    expect(local.output()).not.toContain(secretValue);
    expect(everythingStoredIn(dataDir)).not.toContain(secretValue);
    expect(containersOf(id)).toEqual([]);
  }, 120_000);
});

describe('a relay restart during a docker-executor run', () => {
  it('adopts the container after kill -9: the play runs once and its output is whole', async () => {
    const dataDir = newDataDir();
    const marker = join(markerDir, 'restart.txt');
    const first = await startLocal(dataDir, env());
    let second: LocalProcess | undefined;
    try {
      const api1 = client(first.url, first.token);
      await api1('PUT', '/targets/localhost', LOCALHOST_TARGET);
      const id = await submit(api1, {
        asset: 'marker-slow.yml',
        extraVars: { marker: '/markers/restart.txt', seconds: 8 },
      });
      await waitFor(
        'the play to mark its start',
        async () => {
          try {
            return readFileSync(marker, 'utf8').includes('start') ? true : undefined;
          } catch {
            return undefined;
          }
        },
        60_000,
      );

      await first.kill9();
      expect(containersOf(id)).toHaveLength(1); // the container outlived the relay
      second = await startLocal(dataDir, env());
      const api2 = client(second.url, second.token);
      // The play's 8 s, the restart and the adoption: under the full suite's load podman alone can take
      // tens of seconds, so the wait leaves room (a time-out says the state the run was last seen in).
      const run = await waitForState(api2, id, 'terminal', 120_000);
      const logs = await allLogs(api2, id);

      expect(run.state).toBe('succeeded');
      expect(readFileSync(marker, 'utf8')).toBe('start\nend\n');
      expect(logs).toContain('restarted and adopted this run');
      expect(count(logs, 'TASK [Mark start]')).toBe(1);
      expect(count(logs, 'TASK [Mark end]')).toBe(1);
      expect(count(logs, 'PLAY RECAP')).toBe(1);
      expect(containersOf(id)).toEqual([]);
    } finally {
      await second?.stop();
      if (first.proc.exitCode === null && first.proc.signalCode === null) await first.stop();
    }
  }, 240_000);
});
