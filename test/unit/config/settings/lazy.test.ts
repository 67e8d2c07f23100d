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

  const inputs: Record<string, string>[] = [
    {},
    {
      ANSIBLE_RUNNER_AWS: 'ecs',
      ANSIBLE_ECS_CLUSTER: 'rw',
      ANSIBLE_ECS_SUBNET_ID: 'subnet-0abc,subnet-0def',
    },
    { RELAY_CONCURRENCY: '8', ANSIBLE_ECS_ASSIGN_PUBLIC_IP: 'true', DISCOVERY_CLOUDS: 'aws,gcp' },
    { STORAGE_BACKEND: 'gcs', GCS_BUCKET: 'assets', LAUNCH_BUDGET_ECS_BURST: '50' },
    { PROXMOX_ENABLED: 'yes', PROXMOX_HOST: 'pve.lan', KUBERNETES_PULL_SECRETS: 'a,b' },
  ];
  it.each(inputs)('%o: the same settings as the whole schema gives', (env) => {
    const raw = Object.fromEntries(Object.entries(env).map(([name, value]) => [name.toLowerCase(), value]));
    const whole = settingsSchema().parse(
      JSON.parse(JSON.stringify(loadSettings({ env }))) as Record<string, unknown>,
    );
    expect(Object.keys(raw).every((k) => (SETTING_KEYS as readonly string[]).includes(k))).toBe(true);
    // Same keys, same order, same values.
    expect(Object.entries(loadSettings({ env }))).toEqual(Object.entries(whole));
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
