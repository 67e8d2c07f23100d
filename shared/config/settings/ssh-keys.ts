import { defaulted, optionalText, text } from './fields.ts';

/** SSH keys of cloud VMs, by secret name. */
export const sshKeySettings = {
  // Cloud VM SSH keys, by secret name.
  ansible_ssh_key_sm_name: optionalText,
  gcp_ssh_key_secret_name: optionalText,
  /** Legacy AWS fallback: a Password Safe secret title. */
  ansible_ssh_key_secret: defaulted('AWS_KEY', () => text()),
};
