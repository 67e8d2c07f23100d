import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  allLogs,
  client,
  everythingStoredIn,
  LOCALHOST_TARGET,
  newDataDir,
  startLocal,
  waitForState,
} from './harness.ts';

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
      // Kept as a per-run secret bound to the variable, not as an extra var.
      expect(run.extraVars).not.toHaveProperty('ansible_password');
      expect(submitted.body.secrets).toEqual([
        { var: 'ansible_password', secret: `run-secret:${run.id}/ansible_password` },
      ]);
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

/**
 * Every encoded form the redactor promises to mask, computed here
 * independently of it: what a play could print instead of the value itself.
 */
function encodedForms(value: string): string[] {
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
  const strictUrl = (s: string) =>
    encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const forms: string[] = [];
  // The whole value and each of its lines (a play may print one line of a key).
  for (const v of [value, ...value.split('\n').filter((line) => line.trim().length >= 2)]) {
    forms.push(
      v,
      JSON.stringify(v).slice(1, -1),
      encodeURIComponent(v),
      // Python's quote, as Ansible's urlencode filter prints it: `/` stays.
      strictUrl(v).replaceAll('%2F', '/'),
      `'${v.replaceAll("'", `'\\''`)}'`,
    );
    // Base64 of the text inside a longer text, at each of the three byte alignments:
    // the part of the encoding that depends on the text alone.
    for (const prefix of ['', 'a', 'ab']) {
      const from = Math.ceil((prefix.length * 4) / 3) + 2;
      forms.push(b64(prefix + v).slice(from, from + 16));
    }
  }
  return forms.filter((f) => f.length >= 4);
}

const FORMS_PLAYBOOK = `- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.debug: { msg: "raw {{ api_token }}" }
    - ansible.builtin.debug: { msg: "json {{ api_token | to_json }}" }
    - ansible.builtin.debug: { msg: "url {{ api_token | urlencode }}" }
    - ansible.builtin.debug: { msg: "shell {{ api_token | quote }}" }
    - ansible.builtin.debug: { msg: "b64 {{ api_token | b64encode }} {{ ('a' ~ api_token) | b64encode }} {{ ('ab' ~ api_token) | b64encode }}" }
    - ansible.builtin.debug: { msg: "{{ api_token.split('\\n') }}" }
    - ansible.builtin.command: printf '%s' {{ api_token | quote }}
      changed_when: false
    - ansible.builtin.fail: { msg: "failing with {{ api_token }}" }
`;

describe('canary secrets in every form', () => {
  it('leaves no form of the secret in logs, run records, the data directory, the service output or error answers', async () => {
    const dataDir = newDataDir();
    const storage = newDataDir();
    mkdirSync(join(storage, 'forms'));
    writeFileSync(join(storage, 'forms', 'print.yml'), FORMS_PLAYBOOK);
    // Multi-line (a PEM-like key), with quotes, spaces, a slash and non-ASCII: every encoder has work to do.
    const value = `-----BEGIN CANARY KEY-----\nQ2FuYXJ5IGtleSBib2R5 it's "quoted" / naïve-7c1f\n-----END CANARY KEY-----`;
    writeFileSync(join(dataDir, 'secrets.json'), JSON.stringify({ 'forms-secret': value }), { mode: 0o600 });
    const local = await startLocal(dataDir, { LOCAL_STORAGE_PATH: storage });
    try {
      const api = client(local.url, local.token);
      await api('PUT', '/targets/localhost', LOCALHOST_TARGET);

      const submitted = await api('POST', '/runs', {
        kind: 'vm',
        targetId: 'localhost',
        asset: 'forms/print.yml',
        secrets: [{ var: 'api_token', secret: 'forms-secret' }],
      });
      const run = await waitForState(api, submitted.body.id, 'terminal');
      const logs = await allLogs(api, run.id);
      // An invalid request quoting the value in a plaintext password var: the error answer must not echo it.
      const refused = await api('POST', '/runs', {
        kind: 'vm',
        targetId: 'localhost',
        asset: 'forms/print.yml',
        extraVars: { ansible_password: value },
        timeoutSeconds: -1,
      });

      expect(run.state).toBe('failed');
      expect(logs).toContain('raw ********');
      expect(logs).toContain('failing with ********');
      expect(refused.status).toBe(400);
      const places = {
        logs,
        run: JSON.stringify(run),
        errorAnswer: JSON.stringify(refused.body),
        serviceOutput: local.output(),
        dataDir: everythingStoredIn(dataDir),
      };
      for (const form of encodedForms(value)) {
        for (const [where, text] of Object.entries(places)) {
          expect(text.includes(form), `${where} holds ${JSON.stringify(form)}`).toBe(false);
        }
      }
    } finally {
      await local.stop();
    }
  });
});
