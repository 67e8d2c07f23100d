import { SecretClient } from '@azure/keyvault-secrets';
import { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { OAuth2Client } from 'google-auth-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AzureKeyVaultSecretSource } from '../../shared/adapters/azure-key-vault/secret-source.ts';
import { GcpSecretManagerSecretSource } from '../../shared/adapters/gcp-secret-manager/secret-source.ts';
import type { CloudSecretSources } from '../../shared/app/connection-material.ts';
import { prepareTask } from '../../shared/app/task-prep.ts';
import { buildCloudSecretSources } from '../../shared/composition/cloud-secrets.ts';
import { LaunchRejectedError, ValidationError } from '../../shared/domain/errors.ts';
import type { SecretSource } from '../../shared/ports/secret-source.ts';
import { type FakeGcpSecretManager, startFakeGcpSecretManager } from '../support/fake-gcp-secret-manager.ts';
import { type FakeKeyVault, startFakeKeyVault } from '../support/fake-key-vault.ts';
import { createQueuedRun, makeTestApp, type TestApp, vmTarget } from '../unit/app/harness.ts';

/**
 * A GCP and an Azure VM's SSH keys, end to end through prepareTask: the real
 * Secret Manager and Key Vault clients against their loopback fakes
 * (test/support/fake-gcp-secret-manager.ts, fake-key-vault.ts), and the
 * composition's choice of which stores exist.
 */
describe('cloud VM SSH keys from each cloud’s own secret store', () => {
  const GCP_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\ngcp-canary\n-----END OPENSSH PRIVATE KEY-----\n';
  const AZURE_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nazure-canary\n-----END OPENSSH PRIVATE KEY-----\n';
  let gsm: FakeGcpSecretManager;
  let vault: FakeKeyVault;
  let gcpClient: SecretManagerServiceClient;
  let cloudSecrets: CloudSecretSources;
  let app: TestApp;
  const own: SecretSource = {
    get: (name) => Promise.reject(new Error(`the deployment's store must not read ${name}`)),
  };

  beforeAll(async () => {
    gsm = await startFakeGcpSecretManager();
    gsm.addVersion('acme', 'ssh-ansible-keypair', GCP_KEY);
    vault = await startFakeKeyVault();
    vault.setSecret('ssh-ansible-key', AZURE_KEY);
    const auth = new OAuth2Client();
    auth.setCredentials({ access_token: gsm.token, expiry_date: Date.now() + 3_600_000 });
    gcpClient = new SecretManagerServiceClient({
      apiEndpoint: gsm.host,
      port: gsm.port,
      protocol: 'http',
      fallback: true,
      authClient: auth,
    });
    const credential = {
      getToken: async () => ({ token: vault.token, expiresOnTimestamp: Date.now() + 3_600_000 }),
    };
    cloudSecrets = {
      gcp: new GcpSecretManagerSecretSource({ project: 'acme', client: gcpClient }),
      azure: new AzureKeyVaultSecretSource({
        client: new SecretClient(vault.vaultUrl, credential, {
          tlsOptions: { ca: vault.ca },
          retryOptions: { maxRetries: 0 },
          disableChallengeResourceVerification: true,
        }),
      }),
    };
  });
  afterAll(async () => {
    app?.close();
    await gcpClient?.close();
    await gsm?.stop();
    await vault?.stop();
  });

  const prepare = async (cloud: 'gcp' | 'azure', settings: Record<string, string>) => {
    app?.close();
    app = makeTestApp();
    await app.targets.putTarget(vmTarget(`vm-${cloud}`, { cloud }));
    const run = await createQueuedRun(app.store, app.clock, {
      id: `run-${cloud}`,
      kind: 'vm',
      targetId: `vm-${cloud}`,
      asset: 'hello/site.yml',
    });
    return prepareTask(
      {
        store: app.store,
        targets: app.targets,
        assets: app.deps.assets,
        secrets: own,
        clock: app.clock,
        settings: { ...app.deps.settings, ...settings },
        cloudSecrets,
      },
      run,
    );
  };

  it('gives a GCP VM its key from Secret Manager and an Azure VM its key from Key Vault', async () => {
    const gcp = await prepare('gcp', { gcp_ssh_key_secret_name: 'ssh-ansible-keypair' });
    expect(gcp.secretEnv.RW_SSH_KEY).toBe(GCP_KEY);
    expect(gsm.requests.at(-1)?.path).toBe(
      '/v1/projects/acme/secrets/ssh-ansible-keypair/versions/latest:access',
    );

    const azure = await prepare('azure', { azure_ssh_key_secret_name: 'ssh-ansible-key' });
    expect(azure.secretEnv.RW_SSH_KEY).toBe(AZURE_KEY);
    expect(azure.spec.sshKeyEnv).toBe('RW_SSH_KEY');
    expect(JSON.stringify(azure.spec)).not.toContain('canary');
  });

  it('refuses, naming the setting and the cloud’s permission, when the secret is missing', async () => {
    const gcp = (await prepare('gcp', { gcp_ssh_key_secret_name: 'absent' }).catch(
      (e: unknown) => e,
    )) as Error;
    expect(gcp).toBeInstanceOf(LaunchRejectedError);
    expect(gcp.message).toBe(
      'SSH key secret absent for GCP VM vm-gcp could not be read: verify gcp_ssh_key_secret_name is set and the service account has roles/secretmanager.secretAccessor on the secret',
    );
    const azure = (await prepare('azure', { azure_ssh_key_secret_name: 'absent' }).catch(
      (e: unknown) => e,
    )) as Error;
    expect(azure).toBeInstanceOf(LaunchRejectedError);
    expect(azure.message).toContain('SSH key secret absent for Azure VM vm-azure could not be read');
  });

  it('builds a store only for a cloud whose settings are complete, each refusing a bad name before any request', async () => {
    expect(buildCloudSecretSources({})).toEqual({});
    expect(Object.keys(buildCloudSecretSources({ gcp_project_id: 'acme' }))).toEqual(['gcp']);
    const both = buildCloudSecretSources({
      gcp_project_id: 'acme',
      azure_key_vault_url: 'https://rw-keys.vault.azure.net',
    });
    // The SDKs load on first use; the adapters' own name rules answer without the network.
    await expect(both.gcp?.get('not/a/secret')).rejects.toBeInstanceOf(ValidationError);
    await expect(both.azure?.get('not_a_key_vault_name')).rejects.toThrow(
      'is not a valid Azure Key Vault secret name',
    );
  });
});
