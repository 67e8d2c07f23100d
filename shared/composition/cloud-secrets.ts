import type { TokenCredential } from '@azure/identity';
import type { CloudSecretSources } from '../app/connection-material.ts';
import type { Settings } from '../config/settings.ts';
import type { SecretSource } from '../ports/secret-source.ts';

/** A SecretSource whose SDK is imported on the first read (and again after a failed import). */
function lazy(make: () => Promise<SecretSource>): SecretSource {
  let made: Promise<SecretSource> | undefined;
  return {
    get: async (name) => {
      made ??= make().catch((error: unknown) => {
        made = undefined;
        throw error;
      });
      return (await made).get(name);
    },
  };
}

/**
 * Each cloud's own secret store for its VMs' SSH keys, built only when its
 * settings are complete: GCP Secret Manager when `gcp_project_id` is set
 * (Application Default Credentials), Azure Key Vault when
 * `azure_key_vault_url` is set (`DefaultAzureCredential`: service principal,
 * workload identity or managed identity from AZURE_* variables). Neither SDK
 * is loaded until a run needs a key.
 */
export function buildCloudSecretSources(
  settings: Pick<Settings, 'gcp_project_id' | 'azure_key_vault_url'>,
): CloudSecretSources {
  const project = settings.gcp_project_id;
  const vaultUrl = settings.azure_key_vault_url;
  return {
    ...(project === undefined
      ? {}
      : {
          gcp: lazy(async () => {
            const { GcpSecretManagerSecretSource } = await import(
              '../adapters/gcp-secret-manager/secret-source.ts'
            );
            return new GcpSecretManagerSecretSource({ project });
          }),
        }),
    ...(vaultUrl === undefined
      ? {}
      : {
          azure: lazy(async () => {
            const [{ SecretClient }, { AzureKeyVaultSecretSource }, { defaultAzureCredential }] =
              await Promise.all([
                import('@azure/keyvault-secrets'),
                import('../adapters/azure-key-vault/secret-source.ts'),
                import('../adapters/cluster-auth/aks-token.ts'),
              ]);
            const credential: TokenCredential = {
              getToken: async (scopes, options) => (await defaultAzureCredential()).getToken(scopes, options),
            };
            return new AzureKeyVaultSecretSource({ client: new SecretClient(vaultUrl, credential) });
          }),
        }),
  };
}
