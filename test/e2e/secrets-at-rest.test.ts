import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePasswordSafe, startFakePasswordSafe } from '../support/fake-password-safe.ts';
import {
  allLogs,
  client,
  everythingStoredIn,
  LOCALHOST_TARGET,
  newDataDir,
  startLocal,
  waitFor,
  waitForState,
} from './harness.ts';

/*
 * Local mode end to end (HTTP API, dispatcher, in-process relay, process
 * executor, real ansible-playbook): what is stored while a run with a secret
 * runs and after it ends, and how runs on one Password Safe managed account
 * take turns (the loopback Password Safe's differences from the real API are
 * written in test/integration/password-safe.test.ts).
 */

const FIXTURES = resolve(import.meta.dirname, '../fixtures/playbooks');
const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'refused']);

/** The SQLite file and its WAL and shared-memory files, as one string. */
function database(dataDir: string): string {
  return readdirSync(dataDir)
    .filter((name) => name.startsWith('remote-worker.db'))
    .map((name) => readFileSync(join(dataDir, name)).toString('latin1'))
    .join('\n');
}

/** Every per-run secret file: run id → key → [value, mode]. */
function runSecretFiles(dataDir: string): Record<string, Record<string, [string, number]>> {
  const root = join(dataDir, 'run-secrets');
  if (!existsSync(root)) return {};
  return Object.fromEntries(
    readdirSync(root).map((runId) => [
      runId,
      Object.fromEntries(
        readdirSync(join(root, runId)).map((key) => {
          const path = join(root, runId, key);
          return [key, [readFileSync(path, 'utf8'), statSync(path).mode & 0o777]];
        }),
      ),
    ]),
  );
}

describe('a plaintext ansible_password in local mode', () => {
  it('is a per-run secret while the run runs and gone when it ends; never in the database, a view or a log', async () => {
    const dataDir = newDataDir();
    const gates = mkdtempSync(join(tmpdir(), 'rw-gate-'));
    const canary = `canary-${randomBytes(12).toString('hex')}`;
    const local = await startLocal(dataDir, { LOCAL_STORAGE_PATH: FIXTURES });
    try {
      const api = client(local.url, local.token);
      await api('PUT', '/targets/localhost', LOCALHOST_TARGET);
      const body = {
        kind: 'vm',
        targetId: 'localhost',
        asset: 'password-gate.yml',
        extraVars: { ansible_password: canary, expected_sha1: sha1(canary), gate: join(gates, 'open') },
      };
      const key = { 'idempotency-key': randomUUID() };

      const first = await api('POST', '/runs', body, key);
      // A retried submit (same key, keys in another order) answers the same run and keeps one secret.
      const retried = await api('POST', '/runs', { ...body, extraVars: { ...body.extraVars } }, key);
      expect(first.status).toBe(202);
      expect(retried.body.id).toBe(first.body.id);
      const id: string = first.body.id;
      expect(first.body.extraVars).not.toHaveProperty('ansible_password');
      expect(first.body.secrets).toEqual([
        { var: 'ansible_password', secret: `run-secret:${id}/ansible_password` },
      ]);
      expect(first.body.ephemeralSecrets).toEqual(['ansible_password']);

      await waitFor('the play to wait at its gate', async () =>
        (await allLogs(api, id)).includes('waiting at the gate') ? true : undefined,
      );
      const running = (await api('GET', `/runs/${id}`)).body;
      expect(running.state).toBe('running');
      // While it runs: the value is in its per-run secret file (0600, the only one) and nowhere else.
      expect(runSecretFiles(dataDir)).toEqual({ [id]: { ansible_password: [canary, 0o600] } });
      expect(database(dataDir)).not.toContain(canary);
      expect(JSON.stringify(running)).not.toContain(canary);

      writeFileSync(join(gates, 'open'), '');
      const ended = await waitForState(api, id, 'terminal');
      // Deleted before the end was recorded: gone at the first read that shows the run ended.
      expect(runSecretFiles(dataDir)).toEqual({});
      const logs = await allLogs(api, id);
      expect(ended.state, logs).toBe('succeeded');
      expect(logs).toContain('the password is ********');
      for (const stored of [
        database(dataDir),
        everythingStoredIn(dataDir),
        logs,
        JSON.stringify(ended),
        local.output(),
      ]) {
        expect(stored).not.toContain(canary);
      }
    } finally {
      await local.stop();
    }
    // A real play that waits at a gate, two reads of everything stored: about 12 s alone, more on a busy machine.
  }, 60_000);
});

const API_KEY = `api-key-${randomUUID()}`;
let ps: FakePasswordSafe;
beforeAll(async () => {
  ps = await startFakePasswordSafe({ apiKey: API_KEY, runAs: 'svc-remote-worker' });
});
afterAll(async () => {
  await ps?.close();
});

describe('a managed account on VM runs in local mode', () => {
  it('checks the account out for each run in turn, and checks it in before the run is seen ended', async () => {
    const password = `Pw-${randomBytes(9).toString('base64url')}`;
    // A bare account name is matched on the host's own managed system, named by its address.
    ps.addAccount({ systemName: '127.0.0.1', accountName: 'deploy', password });
    const dataDir = newDataDir();
    writeFileSync(join(dataDir, 'secrets.json'), JSON.stringify({ 'ps-key': API_KEY }), { mode: 0o600 });
    const gates = mkdtempSync(join(tmpdir(), 'rw-gate-'));
    const local = await startLocal(dataDir, {
      LOCAL_STORAGE_PATH: FIXTURES,
      PASSWORD_SAFE_URL: ps.baseUrl,
      PASSWORD_SAFE_API_KEY_SECRET: 'ps-key',
      PASSWORD_SAFE_RUNAS: 'svc-remote-worker',
    });
    try {
      const api = client(local.url, local.token);
      await api('PUT', '/targets/localhost', LOCALHOST_TARGET);
      const submit = async (gate: string) =>
        (
          await api('POST', '/runs', {
            kind: 'vm',
            targetId: 'localhost',
            asset: 'password-gate.yml',
            managedAccount: 'deploy',
            extraVars: { expected_sha1: sha1(password), expected_user: 'deploy', gate: join(gates, gate) },
          })
        ).body.id as string;
      const ids = [await submit('a'), await submit('b')];
      const requestOf = (id: string) => ps.requests.find((r) => r.reason === `remote-worker run ${id}`);

      // Every read that shows a run ended must find that run's request checked in already.
      const seenEnded: Record<string, string | undefined> = {};
      let watching = true;
      const watcher = (async () => {
        while (watching) {
          for (const id of ids) {
            if (id in seenEnded) continue;
            const { body } = await api('GET', `/runs/${id}`);
            if (TERMINAL.has(body.state)) seenEnded[id] = requestOf(id)?.status;
          }
          // Never two open requests for the account: the second run waits for the first's check-in.
          expect(ps.openRequests().length).toBeLessThanOrEqual(1);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();

      const firstRunning = await waitFor('one run to wait at its gate', async () => {
        for (const [i, id] of ids.entries()) {
          if ((await allLogs(api, id)).includes('waiting at the gate')) return i;
        }
        return undefined;
      });
      const [holder, waiter] = firstRunning === 0 ? [ids[0], ids[1]] : [ids[1], ids[0]];
      const gateOf = (id: string | undefined) => join(gates, id === ids[0] ? 'a' : 'b');
      // The other run stays queued while the account is in use, and nothing was checked out for it.
      await new Promise((r) => setTimeout(r, 1500));
      expect((await api('GET', `/runs/${waiter}`)).body.state).toBe('queued');
      expect(requestOf(waiter as string)).toBeUndefined();
      expect((await api('GET', `/runs/${holder}`)).body.heldAccount).toBe('127.0.0.1/deploy');

      writeFileSync(gateOf(holder), '');
      const one = await waitForState(api, holder as string, 'terminal');
      await waitFor('the second run to wait at its gate', async () =>
        (await allLogs(api, waiter as string)).includes('waiting at the gate') ? true : undefined,
      );
      writeFileSync(gateOf(waiter), '');
      const two = await waitForState(api, waiter as string, 'terminal');
      watching = false;
      await watcher;
      // The watcher may have stopped between the wait above seeing the end and its own next read.
      for (const id of ids) {
        if (id in seenEnded) continue;
        const { body } = await api('GET', `/runs/${id}`);
        if (TERMINAL.has(body.state)) seenEnded[id] = requestOf(id)?.status;
      }

      expect([one.state, two.state], await allLogs(api, two.id)).toEqual(['succeeded', 'succeeded']);
      expect(seenEnded).toEqual({ [ids[0] as string]: 'checked_in', [ids[1] as string]: 'checked_in' });
      // Two requests, one per run: the second run never reused the first one's checkout.
      expect(ps.requests.map((r) => r.status)).toEqual(['checked_in', 'checked_in']);
      expect(ps.requests.map((r) => r.reason).sort()).toEqual(
        ids.map((id) => `remote-worker run ${id}`).sort(),
      );
      const everywhere = [
        everythingStoredIn(dataDir),
        local.output(),
        await allLogs(api, one.id),
        JSON.stringify([one, two]),
      ];
      for (const text of everywhere) expect(text).not.toContain(password);
    } finally {
      await local.stop();
    }
  }, 90_000);

  it('refuses a managed account on a run kind other than vm', async () => {
    const local = await startLocal(newDataDir(), { LOCAL_STORAGE_PATH: FIXTURES });
    try {
      const api = client(local.url, local.token);
      const answer = await api('POST', '/runs', {
        kind: 'portainer',
        asset: 'password-gate.yml',
        managedAccount: 'deploy',
      });
      expect(answer.status).toBe(400);
      expect(JSON.stringify(answer.body)).toContain('only vm runs take a managed account');
    } finally {
      await local.stop();
    }
  });
});
