import { describe, expect, it } from 'vitest';
import { sshKeySettings } from '../../../../shared/config/settings/ssh-keys.ts';
import { parseArea } from './area.ts';

describe('SSH key settings', () => {
  it('keep the legacy AWS fallback secret title, and take names only', () => {
    expect(parseArea(sshKeySettings, {}).value).toEqual({ ansible_ssh_key_secret: 'AWS_KEY' });
    expect(parseArea(sshKeySettings, { gcp_ssh_key_secret_name: ' ' }).problems).toEqual([
      'gcp_ssh_key_secret_name',
    ]);
  });
});
