import type { GetTokenOptions } from '@azure/identity';
import { SecretClient } from '@azure/keyvault-secrets';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AzureKeyVaultSecretSource } from '../../shared/adapters/azure-key-vault/secret-source.ts';
import { NotFoundError, ValidationError } from '../../shared/domain/errors.ts';
import { type FakeKeyVault, startFakeKeyVault } from '../support/fake-key-vault.ts';

/**
 * The real @azure/keyvault-secrets SecretClient (its challenge authentication
 * included) against a loopback https fake of Key Vault's Get Secret
 * (test/support/fake-key-vault.ts lists where it differs from Azure).
 */
describe('AzureKeyVaultSecretSource against a loopback Key Vault', () => {
  const KEY =
    '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n';
  let fake: FakeKeyVault;
  let source: AzureKeyVaultSecretSource;
  const tokenRequests: { scopes: string[]; tenantId: string | undefined }[] = [];

  beforeAll(async () => {
    fake = await startFakeKeyVault();
    fake.setSecret('ssh-ansible-key', KEY);
    fake.setSecret('retired-key', 'old', { enabled: false });
    const credential = {
      getToken: async (scopes: string | string[], options?: GetTokenOptions) => {
        tokenRequests.push({ scopes: [scopes].flat(), tenantId: options?.tenantId });
        return { token: fake.token, expiresOnTimestamp: Date.now() + 3_600_000 };
      },
    };
    const client = new SecretClient(fake.vaultUrl, credential, {
      tlsOptions: { ca: fake.ca },
      retryOptions: { maxRetries: 0 },
      disableChallengeResourceVerification: true,
    });
    source = new AzureKeyVaultSecretSource({ client });
  });
  afterAll(async () => {
    await fake?.stop();
  });

  it("reads the secret's current version after answering the vault's challenge", async () => {
    await expect(source.get('ssh-ansible-key')).resolves.toBe(KEY);
    expect(fake.requests.map((r) => [r.path.replace(/\/$/, ''), r.authorized])).toEqual([
      ['/secrets/ssh-ansible-key', false],
      ['/secrets/ssh-ansible-key', true],
    ]);
    expect(tokenRequests).toEqual([
      { scopes: ['https://vault.azure.net/.default'], tenantId: fake.tenantId },
    ]);
  });

  it('is a NotFoundError naming the secret and the vault when absent', async () => {
    const failure = (await source.get('missing-key').catch((e: unknown) => e)) as Error;
    expect(failure).toBeInstanceOf(NotFoundError);
    expect(failure.message).toBe(`Secret "missing-key" does not exist in Azure Key Vault ${fake.vaultUrl}`);
  });

  it('refuses names Key Vault does not allow, before any request', async () => {
    const before = fake.requests.length;
    for (const name of ['ssh_key', 'ssh/key', 'ssh.key', 'clé', '', 'a'.repeat(128)]) {
      const failure = (await source.get(name).catch((e: unknown) => e)) as Error;
      expect(failure).toBeInstanceOf(ValidationError);
      expect(failure.message).toContain('use letters, digits and "-" only');
    }
    expect(fake.requests.length).toBe(before);
  });

  it('passes a disabled secret or a server failure on, naming the secret and never a value', async () => {
    const disabled = (await source.get('retired-key').catch((e: unknown) => e)) as Error;
    expect(disabled).not.toBeInstanceOf(NotFoundError);
    expect(disabled.message).toContain('"retired-key" could not be read');
    expect(disabled.message).toContain('disabled');

    fake.failNext(500);
    const failure = (await source.get('ssh-ansible-key').catch((e: unknown) => e)) as Error;
    expect(failure.message).toContain('"ssh-ansible-key" could not be read');
    expect(failure.message).not.toContain('OPENSSH');
  });
});
