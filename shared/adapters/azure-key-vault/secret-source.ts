import type { SecretClient } from '@azure/keyvault-secrets';
import { NotFoundError, ValidationError } from '../../domain/errors.ts';
import type { SecretSource } from '../../ports/secret-source.ts';

/** Key Vault's own rule for a secret name. */
const SECRET_NAME = /^[0-9a-zA-Z-]{1,127}$/;

export interface AzureKeyVaultSecretSourceOptions {
  /**
   * A SecretClient for the vault (`new SecretClient(vaultUrl, credential)`);
   * the composition builds it from `azure_key_vault_url` and the environment's
   * Azure credential.
   */
  readonly client: SecretClient;
}

/**
 * SecretSource over Azure Key Vault (`@azure/keyvault-secrets`): the secret's
 * current version, as text. Nothing is cached: an SSH key is read once per
 * run. A name Key Vault cannot hold (only letters, digits and "-", at most
 * 127) is a ValidationError, before any request.
 *
 * Values never appear in an error or a log: errors name the secret and the
 * vault only, and this adapter logs nothing.
 *
 * @example
 * const secrets = new AzureKeyVaultSecretSource({ client: new SecretClient(vaultUrl, credential) });
 * const key = await secrets.get('ssh-ansible-key'); // NotFoundError naming the secret when absent
 */
export class AzureKeyVaultSecretSource implements SecretSource {
  constructor(private readonly options: AzureKeyVaultSecretSourceOptions) {}

  async get(name: string): Promise<string> {
    const { client } = this.options;
    if (!SECRET_NAME.test(name)) {
      throw new ValidationError(
        `Secret name "${name}" is not a valid Azure Key Vault secret name: use letters, digits and "-" only (at most 127)`,
      );
    }
    let value: string | undefined;
    try {
      value = (await client.getSecret(name)).value;
    } catch (error) {
      const e = error as { statusCode?: unknown; code?: unknown; message?: unknown };
      if (e.statusCode === 404) {
        throw new NotFoundError(`Secret "${name}" does not exist in Azure Key Vault ${client.vaultUrl}`, {
          cause: error,
        });
      }
      // RestError messages are the vault's (they name the secret or the caller, never a value).
      throw new Error(
        `Azure Key Vault secret "${name}" could not be read from ${client.vaultUrl}: ${String(e.message)}`,
        { cause: error },
      );
    }
    if (value === undefined || value === '') {
      throw new NotFoundError(`Secret "${name}" has no value in Azure Key Vault ${client.vaultUrl}`);
    }
    return value;
  }
}
