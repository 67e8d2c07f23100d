import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakePasswordSafe, startFakePasswordSafe } from '../support/fake-password-safe.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { allLogs, client, everythingStoredIn, newDataDir, startLocal, waitForState } from './harness.ts';

/*
 * A registered on-prem database through the whole system: local mode (real
 * HTTP API, dispatcher, in-process relay, process executor, task shim), the
 * real ansible-playbook with community.postgresql against a throwaway
 * PostgreSQL, and the managed account checked out just in time from a
 * loopback Password Safe (its differences from the real API are written in
 * test/integration/password-safe.test.ts).
 */

const ADMIN_PASSWORD = `Adm-${randomBytes(12).toString('base64url')}`;
const ROLE_PASSWORD = `role-${randomBytes(9).toString('base64url')}`;
const API_KEY = `api-key-${randomUUID()}`;

let ps: FakePasswordSafe;
let pg: TestPostgres;

beforeAll(async () => {
  [ps, pg] = await Promise.all([
    startFakePasswordSafe({ apiKey: API_KEY, runAs: 'svc-remote-worker' }),
    startPostgres({ adminPassword: ADMIN_PASSWORD }),
  ]);
  ps.addAccount({
    systemName: 'pg-onprem-01',
    accountName: pg.adminUser,
    password: ADMIN_PASSWORD,
  });
}, 60_000);

afterAll(async () => {
  await Promise.all([pg?.stop(), ps?.close()]);
});

describe('a registered database in local mode', () => {
  it('checks the managed account out for the run, creates the role, and checks it in — also when the play fails', async () => {
    const dataDir = newDataDir();
    writeFileSync(
      join(dataDir, 'secrets.json'),
      JSON.stringify({ 'password-safe-api-key': API_KEY, 'app-role-password': ROLE_PASSWORD }),
      { mode: 0o600 },
    );
    const local = await startLocal(dataDir, {
      PASSWORD_SAFE_URL: ps.baseUrl,
      PASSWORD_SAFE_API_KEY_SECRET: 'password-safe-api-key',
      PASSWORD_SAFE_RUNAS: 'svc-remote-worker',
    });
    try {
      const api = client(local.url, local.token);
      const put = await api('PUT', '/targets/db-onprem-01', {
        kind: 'database',
        cloud: 'local',
        name: 'On-prem PostgreSQL',
        engine: 'postgresql',
        endpoint: { host: pg.host, port: pg.port },
        source: 'registered',
        managedAccount: `pg-onprem-01/${pg.adminUser}`,
      });
      expect(put.status).toBe(201);

      const submit = (extraVars: Record<string, unknown>) =>
        api('POST', '/runs', {
          kind: 'database_play',
          targetId: 'db-onprem-01',
          asset: 'database/postgresql-role.yml',
          extraVars,
          secrets: [{ var: 'role_password', secret: 'app-role-password' }],
        });

      const ok = await waitForState(api, (await submit({ role_name: 'app_reader' })).body.id, 'terminal');
      const okLogs = await allLogs(api, ok.id);
      expect(ok.state, okLogs).toBe('succeeded');
      expect(await pg.query("SELECT rolname FROM pg_roles WHERE rolname = 'app_reader'")).toBe('app_reader');
      // The role logs in with the bound secret: the value reached the play, not the record.
      expect(await pg.queryAs('app_reader', ROLE_PASSWORD, 'SELECT 1')).toBe('1');
      expect(ok.credentialLease).toMatch(/^ps1:/);
      // Checked in before the end was recorded: done by the time a client sees the run ended.
      expect(ps.requests.map((r) => r.status)).toEqual(['checked_in']);

      // A play that fails (no such database): the account is checked in all the same.
      const bad = await waitForState(
        api,
        (await submit({ role_name: 'app_writer', db_login_db: 'no_such_db' })).body.id,
        'terminal',
      );
      expect(bad.state).toBe('failed');

      // The relay checks the account in (and signs out) before it records the run's end.
      expect(ps.requests.map((r) => r.status)).toEqual(['checked_in', 'checked_in']);
      expect(ps.openSessions()).toBe(0);
      expect(ps.openRequests()).toEqual([]);
      const everywhere = [
        okLogs,
        await allLogs(api, bad.id),
        JSON.stringify([ok, bad]),
        local.output(),
        everythingStoredIn(dataDir),
      ].join('\n');
      for (const secret of [ADMIN_PASSWORD, ROLE_PASSWORD, API_KEY]) expect(everywhere).not.toContain(secret);
    } finally {
      await local.stop();
    }
    // Two real plays against PostgreSQL: about 20 s on a loaded 2-core machine.
  }, 60_000);
});
