import { describe, expect, it } from 'vitest';
import {
  loadSettings,
  SETTING_KEYS,
  SETTING_SHAPE,
  settingsSchema,
} from '../../../../shared/config/load-settings.ts';
import type { SettingDef } from '../../../../shared/config/settings/fields.ts';

/*
 * loadSettings parses only the keys it is given and gives an unset key its
 * recorded default (settings/fields.ts `defaulted`) without building its
 * schema. These hold that to what the whole schema makes of the same input.
 */
describe('settings parsed key by key', () => {
  it.each(SETTING_KEYS)('%s unset: its recorded default, or unset, as its schema has it', (key) => {
    const def: SettingDef = SETTING_SHAPE[key];
    const parsed = def().safeParse(undefined);
    expect(parsed.success).toBe(true);
    expect(parsed.data).toEqual('fallback' in def ? def.fallback : undefined);
  });

  const inputs: Record<string, unknown>[] = [
    {},
    {
      ansible_runner_aws: 'ecs',
      ansible_ecs_cluster: 'rw',
      ansible_ecs_subnet_id: 'subnet-0abc,subnet-0def',
    },
    { relay_concurrency: 8, ansible_ecs_assign_public_ip: true, discovery_clouds: 'aws,gcp' },
    { storage_backend: 'gcs', gcs_bucket: 'assets', launch_budget_ecs_burst: 50 },
    { proxmox_enabled: true, proxmox_host: 'pve.lan', kubernetes_pull_secrets: ['a', 'b'] },
  ];
  it.each(inputs)('%o: the same settings as the whole schema makes of the same file', (file) => {
    const loaded = loadSettings({
      env: { REMOTE_WORKER_CONFIG: '/etc/remote-worker/settings.json' },
      readFile: () => JSON.stringify(file),
    });
    // Same keys, same order, same values.
    expect(Object.entries(loaded)).toEqual(Object.entries(settingsSchema().parse(file)));
  });

  // settings/fields.ts optionalText: a string given for these is checked without building their schema.
  const PLAIN_TEXT = SETTING_KEYS.filter((key) => (SETTING_SHAPE[key] as SettingDef).plainText === true);
  const TEXTS = ['rw', '  padded name  ', 'arn:aws:iam::123456789012:role/x', '', '   ', '\t\n'];
  it.each(PLAIN_TEXT)(
    '%s, plain text: every string loads as the whole schema parses it, or is refused alike',
    (key) => {
      for (const text of TEXTS) {
        const file = { [key]: text };
        const expected = settingsSchema().safeParse(file);
        const outcome = (() => {
          try {
            const loaded = loadSettings({
              env: { REMOTE_WORKER_CONFIG: '/etc/remote-worker/settings.json' },
              readFile: () => JSON.stringify(file),
            });
            return { value: loaded[key] };
          } catch (error) {
            const { problems } = error as { problems: { path: string; message: string }[] };
            return { refused: problems.map((p) => `${p.path}: ${p.message.replace(/ \([^)]*\)$/, '')}`) };
          }
        })();
        expect(outcome, JSON.stringify(text)).toEqual(
          expected.success
            ? { value: expected.data[key] }
            : { refused: expected.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`) },
        );
      }
    },
  );

  it('marks the text keys that may be unset, and only them, plain text', () => {
    expect(PLAIN_TEXT).toContain('ansible_ecs_cluster');
    expect(PLAIN_TEXT).toContain('ansible_ecs_execution_role_arn');
    expect(PLAIN_TEXT).toHaveLength(24);
    for (const key of PLAIN_TEXT) {
      const schema = SETTING_SHAPE[key]();
      expect(schema.safeParse(undefined).success, key).toBe(true);
      expect(schema.safeParse(' a ').data, key).toBe('a');
      expect(schema.safeParse(7).success, key).toBe(false);
    }
  });

  it('reports bad keys as the whole schema does, every problem at once', () => {
    const problems = (() => {
      try {
        loadSettings({ env: { RELAY_CONCURRENCY: '0', DEFAULT_TIMEOUT_SECONDS: 'soon' } });
      } catch (error) {
        return (error as { problems: { path: string }[] }).problems.map((p) => p.path);
      }
      return 'no error';
    })();
    expect(problems).toEqual(['relay_concurrency', 'default_timeout_seconds']);
  });

  it('refuses what only the rules across keys catch', () => {
    expect(() => loadSettings({ env: { STORAGE_BACKEND: 'gcs' } })).toThrow(/gcs_bucket/);
    expect(() =>
      loadSettings({ env: { DEFAULT_TIMEOUT_SECONDS: '7200', MAX_TIMEOUT_SECONDS: '3600' } }),
    ).toThrow(/default_timeout_seconds/);
  });
});
