import { describe, expect, it } from 'vitest';
import { ENV_NAME, isEnvName } from '../../../shared/domain/env-name.ts';

describe('isEnvName', () => {
  it('accepts letters, digits and underscores after a letter or underscore', () => {
    for (const name of ['PORTAINER_URL', 'RW_SECRET_0', '_private', 'db_password', 'a']) {
      expect(isEnvName(name)).toBe(true);
    }
  });

  it('refuses empty names, a leading digit, spaces, dashes and other characters', () => {
    for (const name of ['', '0ABC', 'A B', 'my-var', 'A=B', 'ÄPFEL', 'A\nB', ' A']) {
      expect(isEnvName(name)).toBe(false);
    }
  });

  it('is anchored at both ends', () => {
    expect(ENV_NAME.test('ok\nnot ok')).toBe(false);
    expect(ENV_NAME.source.startsWith('^')).toBe(true);
    expect(ENV_NAME.source.endsWith('$')).toBe(true);
  });
});
