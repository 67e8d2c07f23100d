import { describe, expect, it, vi } from 'vitest';
import { deployedEnvironment } from '../../../bench/support/deployed-environment.ts';
import { loadSettings, sealableSettings } from '../../../shared/config/load-settings.ts';
import {
  readSealedSettings,
  SEALED_SETTINGS_DIGEST_ENV,
  SEALED_SETTINGS_ENV,
  sealedSettingsEnvironment,
} from '../../../shared/config/sealed-settings.ts';
import { SettingsInvalidError } from '../../../shared/domain/errors.ts';

/** The problems loadSettings reports for `env`. */
function problemsOf(env: Record<string, string>): unknown {
  try {
    loadSettings({ env });
  } catch (error) {
    if (error instanceof SettingsInvalidError) return error.problems;
    throw error;
  }
  throw new Error('loadSettings accepted the settings');
}

describe('sealed settings (REMOTE_WORKER_SETTINGS, checked at synth)', () => {
  const variables = {
    ansible_runner_aws: 'ecs',
    default_timeout_seconds: '3600',
    ansible_ecs_subnet_id: 'subnet-0a1b2c3d4e5f60011,subnet-0a1b2c3d4e5f60012',
    ansible_ecs_security_group_ids: 'sg-0a1b2c3d4e5f60021',
  };
  /** The same settings, one variable each, as a function got them before they were sealed. */
  const oneEach = Object.fromEntries(Object.entries(variables).map(([k, v]) => [k.toUpperCase(), v]));

  it('seals each value as its schema puts it out, and loads the same settings as one variable each', () => {
    const { sealed, rest } = sealableSettings(variables);

    expect(sealed).toEqual({
      ansible_runner_aws: 'ecs',
      default_timeout_seconds: 3600,
      ansible_ecs_subnet_id: 'subnet-0a1b2c3d4e5f60011,subnet-0a1b2c3d4e5f60012',
      ansible_ecs_security_group_ids: ['sg-0a1b2c3d4e5f60021'],
    });
    expect(rest).toEqual({});
    expect(loadSettings({ env: sealedSettingsEnvironment(sealed) })).toEqual(loadSettings({ env: oneEach }));
  });

  it('refuses at synth a value its schema refuses, naming the setting', () => {
    expect(() => sealableSettings({ default_timeout_seconds: 'soon' })).toThrow(SettingsInvalidError);
    expect(() => sealableSettings({ ansible_runer_aws: 'ecs' })).toThrow(/did you mean ansible_runner_aws/);
  });

  it('takes sealed values as they are while the digest matches the text: the build checked them', () => {
    // A value no schema would take, sealed with a matching digest: not checked again, so it comes through.
    const env = sealedSettingsEnvironment({ default_timeout_seconds: 'not a number' });

    expect(loadSettings({ env }).default_timeout_seconds).toBe('not a number');
  });

  it('checks text edited after the build (the digest no longer matches) like any other source', () => {
    const env = sealedSettingsEnvironment({ ansible_runner_aws: 'ecs' });
    const edited = { ...env, [SEALED_SETTINGS_ENV]: '{"ansible_runner_aws":"fargate"}' };

    expect(readSealedSettings(edited)).toEqual({ values: { ansible_runner_aws: 'fargate' }, checked: false });
    expect(problemsOf(edited)).toEqual([
      { path: 'ansible_runner_aws', message: expect.stringMatching(/\(from env REMOTE_WORKER_SETTINGS\)$/) },
    ]);
    // A digest alone, or none, checks the same way.
    expect(problemsOf({ [SEALED_SETTINGS_ENV]: '{"ansible_runner_aws":"fargate"}' })).toHaveLength(1);
    expect(
      loadSettings({ env: { ...edited, [SEALED_SETTINGS_ENV]: '{"ansible_runner_aws":"aci"}' } }),
    ).toMatchObject({
      ansible_runner_aws: 'aci',
    });
  });

  it('names REMOTE_WORKER_SETTINGS when it is not a JSON object, and an unknown key in it', () => {
    expect(problemsOf({ [SEALED_SETTINGS_ENV]: '{"ansible_runner_aws":' })).toEqual([
      { path: SEALED_SETTINGS_ENV, message: 'must be a JSON object of settings; it is not JSON' },
    ]);
    expect(problemsOf({ [SEALED_SETTINGS_ENV]: '["ecs"]' })).toEqual([
      { path: SEALED_SETTINGS_ENV, message: 'must be a JSON object of settings' },
    ]);
    expect(problemsOf(sealedSettingsEnvironment({ ansible_runer_aws: 'ecs' }))).toEqual([
      {
        path: 'ansible_runer_aws',
        message: 'unknown setting (from env REMOTE_WORKER_SETTINGS); did you mean ansible_runner_aws?',
      },
    ]);
  });

  it('lets a setting variable override a sealed value, and checks the variable', () => {
    const env = sealedSettingsEnvironment(sealableSettings(variables).sealed);

    expect(loadSettings({ env: { ...env, ANSIBLE_RUNNER_AWS: 'aci' } }).ansible_runner_aws).toBe('aci');
    expect(problemsOf({ ...env, DEFAULT_TIMEOUT_SECONDS: 'soon' })).toEqual([
      {
        path: 'default_timeout_seconds',
        message: expect.stringMatching(/\(from env DEFAULT_TIMEOUT_SECONDS\)$/),
      },
    ]);
  });

  it('runs the rules across settings on sealed values too, with the variables given beside them', () => {
    // Each value is fine on its own, so both seal; together they break a rule only the load can see.
    const env = sealedSettingsEnvironment(
      sealableSettings({ default_timeout_seconds: '7200', max_timeout_seconds: '3600' }).sealed,
    );

    expect(env[SEALED_SETTINGS_DIGEST_ENV]).toMatch(/^[0-9a-f]{64}$/);
    expect(problemsOf(env)).toEqual([
      {
        path: 'default_timeout_seconds',
        message: expect.stringMatching(/must not exceed max_timeout_seconds/),
      },
    ]);
    expect(loadSettings({ env: { ...env, MAX_TIMEOUT_SECONDS: '7200' } }).default_timeout_seconds).toBe(7200);
  });

  it('a function in its deployed environment loads its settings without building one setting’s schema', async () => {
    // A fresh module, so no schema was built by an earlier test; every key's builder counted.
    vi.resetModules();
    const fresh = await import('../../../shared/config/load-settings.ts');
    const shape = fresh.SETTING_SHAPE as unknown as Record<string, (() => unknown) & object>;
    const built: string[] = [];
    const originals = { ...shape };
    for (const [key, build] of Object.entries(originals)) {
      shape[key] = Object.assign(() => {
        built.push(key);
        return build();
      }, build);
    }
    try {
      const env = deployedEnvironment();
      // What stays a variable: the two references synth cannot know (plain text: settings/fields.ts optionalText).
      expect(Object.keys(env).filter((k) => k.startsWith('ANSIBLE_'))).toEqual([
        'ANSIBLE_ECS_CLUSTER',
        'ANSIBLE_ECS_EXECUTION_ROLE_ARN',
      ]);

      const settings = fresh.loadSettings({ env });

      expect(settings.ansible_ecs_cluster).toBe(env.ANSIBLE_ECS_CLUSTER);
      expect(settings.ansible_ecs_execution_role_arn).toBe(env.ANSIBLE_ECS_EXECUTION_ROLE_ARN);
      expect(built).toEqual([]);
      // The counting sees a build: a value the schema must check.
      fresh.loadSettings({ env: { ...env, RELAY_CONCURRENCY: '4' } });
      expect(built).toEqual(['relay_concurrency']);
    } finally {
      Object.assign(shape, originals);
    }
  });
});
