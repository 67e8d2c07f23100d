import * as z from '../../lib/zod.ts';
import { defaulted, text } from './fields.ts';

/** SSH keys of cloud VMs, by secret name. */
export const sshKeySettings = {
  // Cloud VM SSH keys, by secret name.
  ansible_ssh_key_sm_name: () => z.optional(text()),
  gcp_ssh_key_secret_name: () => z.optional(text()),
  /** Legacy AWS fallback: a Password Safe secret title. */
  ansible_ssh_key_secret: defaulted('AWS_KEY', () => text()),
};
