import { describe, expect, it } from 'vitest';
import { cloudSecretSettings } from '../../../../shared/config/settings/cloud-secrets.ts';
import { loadSettings } from '../../../../shared/config/settings.ts';
import { parseArea } from './area.ts';

describe('cloud secret settings', () => {
  it('take an https Key Vault URL and a Key Vault secret name', () => {
    const vault = 'https://rw-keys.vault.azure.net';
    expect(
      parseArea(cloudSecretSettings, {
        azure_key_vault_url: vault,
        azure_ssh_key_secret_name: 'ssh-ansible-key',
      }).value,
    ).toEqual({ azure_key_vault_url: vault, azure_ssh_key_secret_name: 'ssh-ansible-key' });
    expect(parseArea(cloudSecretSettings, {}).value).toEqual({});
  });

  it('refuse a plain-http vault and a secret name Key Vault cannot hold', () => {
    expect(
      parseArea(cloudSecretSettings, { azure_key_vault_url: 'http://rw-keys.vault.azure.net' }).problems,
    ).toEqual(['azure_key_vault_url']);
    for (const name of ['ssh_key', 'ssh/key', ' ', 'a'.repeat(128)]) {
      const { problems } = parseArea(cloudSecretSettings, { azure_ssh_key_secret_name: name });
      expect(new Set(problems)).toEqual(new Set(['azure_ssh_key_secret_name']));
    }
  });

  it('are read from the environment like every key', () => {
    const settings = loadSettings({
      env: { AZURE_KEY_VAULT_URL: 'https://v.vault.azure.net', AZURE_SSH_KEY_SECRET_NAME: 'vm-key' },
    });
    expect(settings).toMatchObject({
      azure_key_vault_url: 'https://v.vault.azure.net',
      azure_ssh_key_secret_name: 'vm-key',
    });
  });
});
