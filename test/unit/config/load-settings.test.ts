import { describe, expect, it } from 'vitest';
import { loadSettings as loadJsonSettings } from '../../../shared/config/load-settings.ts';
import { loadSettings } from '../../../shared/config/settings.ts';
import { SettingsInvalidError } from '../../../shared/domain/errors.ts';

const files: Record<string, string> = {
  '/etc/rw/settings.yaml': 'ansible_runner: local\n',
  '/etc/rw/settings.json': '{"ansible_runner": "local"}',
};
const readFile = (path: string): string => {
  const content = files[path];
  if (content === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
  return content;
};

describe('load-settings.ts (the Lambda loader, no YAML parser)', () => {
  it('reads a JSON settings file', () => {
    const settings = loadJsonSettings({ env: { REMOTE_WORKER_CONFIG: '/etc/rw/settings.json' }, readFile });
    expect(settings.ansible_runner).toBe('local');
  });

  it('refuses a YAML settings file, naming REMOTE_WORKER_CONFIG and saying what to give instead', () => {
    const load = () => loadJsonSettings({ env: { REMOTE_WORKER_CONFIG: '/etc/rw/settings.yaml' }, readFile });
    expect(load).toThrow(SettingsInvalidError);
    try {
      load();
    } catch (error) {
      expect((error as SettingsInvalidError).problems).toEqual([
        {
          path: 'REMOTE_WORKER_CONFIG',
          message: expect.stringMatching(/settings\.yaml is YAML.*environment variables or a JSON file/),
        },
      ]);
    }
  });

  it('settings.ts, the loader local mode uses, reads the same YAML file', () => {
    const settings = loadSettings({ env: { REMOTE_WORKER_CONFIG: '/etc/rw/settings.yaml' }, readFile });
    expect(settings.ansible_runner).toBe('local');
  });
});
