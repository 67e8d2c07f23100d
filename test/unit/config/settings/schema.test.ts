import { describe, expect, it } from 'vitest';
import { settingsSchema } from '../../../../shared/config/settings/schema.ts';

describe('settingsSchema (every area in one schema)', () => {
  it('refuses a key no area declares', () => {
    expect(settingsSchema().safeParse({ no_such_key: 1 }).error?.issues[0]?.code).toBe('unrecognized_keys');
  });

  it('runs every area’s rules in one parse', () => {
    const result = settingsSchema().safeParse({
      storage_backend: 'gcs',
      password_safe_url: 'https://pws.example',
      default_timeout_seconds: 10,
      max_timeout_seconds: 5,
    });

    expect(result.error?.issues.map((i) => i.path.join('.'))).toEqual([
      'gcs_bucket',
      'password_safe_api_key_secret',
      'password_safe_runas',
      'default_timeout_seconds',
    ]);
  });
});
