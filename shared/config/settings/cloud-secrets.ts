import * as z from '../../lib/zod.ts';
import { text } from './fields.ts';

/**
 * Where GCP and Azure VMs' SSH keys come from: each cloud's own secret store.
 * GCP reads `gcp_ssh_key_secret_name` (ssh-keys.ts) from Secret Manager in
 * `gcp_project_id` (cloud-run.ts); Azure reads `azure_ssh_key_secret_name`
 * from the Key Vault at `azure_key_vault_url`. A store is built only when its
 * keys are set; a run that needs one that is not refuses, naming the key.
 */
export const cloudSecretSettings = {
  /** The Key Vault holding Azure VMs' SSH keys: https://<vault>.vault.azure.net */
  azure_key_vault_url: () =>
    z.optional(
      z.url({ protocol: /^https$/, error: 'must be an https URL such as https://<vault>.vault.azure.net' }),
    ),
  /** Key Vault secret holding Azure VMs' SSH private key (letters, digits and "-"); unset, Azure VMs bring their own credentials. */
  azure_ssh_key_secret_name: () =>
    z.optional(
      text().check(
        z.regex(
          /^[0-9a-zA-Z-]{1,127}$/,
          'must be a Key Vault secret name: letters, digits and "-" only (at most 127)',
        ),
      ),
    ),
};
