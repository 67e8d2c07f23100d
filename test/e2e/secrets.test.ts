import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allLogs, client, LOCALHOST_TARGET, newDataDir, startLocal, waitForState } from './harness.ts';

/** Every file under `dir` except secrets.json, as one string. */
function everythingStoredIn(dir: string): string {
  let text = '';
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) text += everythingStoredIn(path);
    else if (name !== 'secrets.json') text += readFileSync(path).toString('latin1');
  }
  return text;
}

describe('secret bindings in local mode', () => {
  it('hands the secret to the play and keeps it out of logs, records and the database', async () => {
    const dataDir = newDataDir();
    const value = 'sk-live-7f3a9c2e51d84b06';
    writeFileSync(join(dataDir, 'secrets.json'), JSON.stringify({ 'demo-token': value }), { mode: 0o600 });
    const local = await startLocal(dataDir);
    try {
      const api = client(local.url, local.token);
      await api('PUT', '/targets/localhost', LOCALHOST_TARGET);

      const submitted = await api('POST', '/runs', {
        kind: 'vm',
        targetId: 'localhost',
        asset: 'hello/secret.yml',
        secrets: [{ var: 'api_token', secret: 'demo-token' }],
      });
      const run = await waitForState(api, submitted.body.id, 'terminal');
      const logs = await allLogs(api, run.id);

      expect(run.state).toBe('succeeded');
      expect(logs).toContain('token is ********');
      expect(logs).not.toContain(value);
      expect(JSON.stringify(run)).not.toContain(value);
      expect(local.output()).not.toContain(value);
      expect(everythingStoredIn(dataDir)).not.toContain(value);
    } finally {
      await local.stop();
    }
  });

  it('masks a WinRM password forwarded as an extra var in the run and its output', async () => {
    const local = await startLocal(newDataDir());
    try {
      const api = client(local.url, local.token);
      await api('PUT', '/targets/localhost', LOCALHOST_TARGET);
      const password = 'winrm-Pa55-canary-9d1e';

      // secret.yml prints api_token; giving it the password's value makes the play print the password.
      const submitted = await api('POST', '/runs', {
        kind: 'vm',
        targetId: 'localhost',
        asset: 'hello/secret.yml',
        extraVars: { api_token: password, ansible_password: password },
      });
      const run = await waitForState(api, submitted.body.id, 'terminal');
      const logs = await allLogs(api, run.id);

      expect(run.state).toBe('succeeded');
      expect(run.extraVars.ansible_password).toBe('********');
      expect(submitted.body.extraVars.ansible_password).toBe('********');
      expect(logs).toContain('token is ********');
      expect(logs).not.toContain(password);
    } finally {
      await local.stop();
    }
  });

  it('fails the run naming a secret that does not exist, without starting it', async () => {
    const local = await startLocal(newDataDir());
    try {
      const api = client(local.url, local.token);
      await api('PUT', '/targets/localhost', LOCALHOST_TARGET);

      const submitted = await api('POST', '/runs', {
        kind: 'vm',
        targetId: 'localhost',
        asset: 'hello/secret.yml',
        secrets: [{ var: 'api_token', secret: 'missing-token' }],
      });
      const run = await waitForState(api, submitted.body.id, 'terminal');

      expect(run.state).toBe('failed');
      expect(run.reason).toContain('missing-token');
      expect(run.history.map((h: { state: string }) => h.state)).not.toContain('running');
    } finally {
      await local.stop();
    }
  });
});
