import { HYPERVISORS, type Hypervisor } from '../../domain/hypervisors.ts';
import { once } from '../../lib/once.ts';
import * as z from '../../lib/zod.ts';
import { optionalText, text } from './fields.ts';

/**
 * The on-premises hypervisor integrations' settings, spread into the one
 * settings schema (settings.ts). Per hypervisor (`proxmox`, `vsphere`,
 * `hyperv`, `xcpng`, `nutanix`): `<h>_enabled`, `<h>_host`, `<h>_user` and
 * `<h>_password_secret` — the NAME of the secret holding the password, never
 * the password. Proxmox also takes `proxmox_token_secret` (its API token),
 * which the seeds' Proxmox note says is not enough for SSH.
 *
 * An integration is in the inventory only when it is enabled and has a host;
 * any other combination is valid and silently omitted, as in the seeds.
 */

/*
 * One schema per field, shared by the five integrations (zod schemas are
 * immutable): building them per hypervisor cost a cold start ~40 schemas more.
 */
// Optional rather than default(false): unset is off, and the defaults stay the documented few.
const ENABLED = once(() => z.optional(z.boolean()));
const HOST = once(() =>
  z.optional(
    text().check(
      z.maxLength(253),
      z.regex(/^[A-Za-z0-9._:[\]-]+$/, 'must be a host name or an IP address, without a scheme or a path'),
    ),
  ),
);
const USER = once(() => z.optional(text().check(z.maxLength(64))));
const SECRET_NAME = once(() => z.optional(text()));

function integration<H extends Hypervisor>(name: H) {
  return {
    [`${name}_enabled`]: ENABLED,
    [`${name}_host`]: HOST,
    [`${name}_user`]: USER,
    [`${name}_password_secret`]: SECRET_NAME,
  } as Record<`${H}_enabled`, () => z.ZodMiniOptional<z.ZodMiniBoolean<boolean>>> &
    Record<
      `${H}_host` | `${H}_user` | `${H}_password_secret`,
      () => z.ZodMiniOptional<z.ZodMiniString<string>>
    >;
}

export const HYPERVISOR_SETTINGS = {
  ...integration(HYPERVISORS[0]),
  ...integration(HYPERVISORS[1]),
  ...integration(HYPERVISORS[2]),
  ...integration(HYPERVISORS[3]),
  ...integration(HYPERVISORS[4]),
  /** Proxmox's API token secret name: the management API accepts it, SSH does not. */
  proxmox_token_secret: optionalText,
};
