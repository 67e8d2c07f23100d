import type { TokenCredential } from '@azure/identity';
import type { CloudSecretSources } from '../app/connection-material.ts';
import type { Settings } from '../config/settings.ts';
import { onFirstUse } from '../lib/on-first-use.ts';
import type { SecretSource } from '../ports/secret-source.ts';
import { withCloudSdk } from './launchers.ts';

/** A SecretSource whose SDK is imported on the first read (and again after a failed import). */
function lazy(make: () => Promise<SecretSource>): SecretSource {
  const source = onFirstUse(make);
  return { get: async (name) => (await source()).get(name) };
}

/**
 * Each cloud's own secret store for its VMs' SSH keys, built only when its
 * settings are complete: GCP Secret Manager when `gcp_project_id` is set
 * (Application Default Credentials), Azure Key Vault when
 * `azure_key_vault_url` is set (`DefaultAzureCredential`: service principal,
 * workload identity or managed identity from AZURE_* variables). Neither SDK
 * is loaded until a run needs a key, and neither is bundled into a function
 * that never touches a task (RW_CLOUD_SDKS, infra/bundling.ts).
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
          gcp: lazy(
            withCloudSdk(
              'GCP Secret Manager',
              'gcpSecrets',
              ({ GcpSecretManagerSecretSource }) => new GcpSecretManagerSecretSource({ project }),
            ),
          ),
        }),
    ...(vaultUrl === undefined
      ? {}
      : {
          azure: lazy(
            withCloudSdk(
              'Azure Key Vault',
              'azureSecrets',
              ([{ SecretClient }, { AzureKeyVaultSecretSource }, { defaultAzureCredential }]) => {
                const credential: TokenCredential = {
                  getToken: async (scopes, options) =>
                    (await defaultAzureCredential()).getToken(scopes, options),
                };
                return new AzureKeyVaultSecretSource({ client: new SecretClient(vaultUrl, credential) });
              },
            ),
          ),
        }),
  };
}
