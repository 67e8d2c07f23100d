import * as z from '../../lib/zod.ts';
import {
  type AreaSettings,
  cidr,
  defaulted,
  httpUrl,
  list,
  optionalText,
  type RuleContext,
} from './fields.ts';

/** Password Safe (just-in-time checkouts) and Portainer. */
export const integrationSettings = {
  // Password Safe (BeyondTrust) for just-in-time checkout of registered databases' managed accounts.
  password_safe_url: () => z.optional(httpUrl()),
  /** The NAME of the secret holding the Password Safe API key, never the key. */
  password_safe_api_key_secret: optionalText,
  /** The Password Safe user the API key acts as (`runas`). */
  password_safe_runas: optionalText,
  /** Requested checkout duration; the run's own timeout is used when longer. */
  password_safe_checkout_minutes: defaulted(60, () => z.int().check(z.minimum(1), z.maximum(10_080))),

  portainer_url: () => z.optional(httpUrl()),
  /** The NAME of the secret holding the API token, never the token. */
  portainer_api_token_secret: optionalText,
  portainer_allowed_source_cidrs: () => z.optional(z.pipe(list(z.string()), z.array(cidr()))),
};

/** Password Safe chosen (its URL set) but half configured would fail only at the first checkout. */
export function checkIntegrations(s: AreaSettings<typeof integrationSettings>, check: RuleContext): void {
  if (s.password_safe_url !== undefined) {
    check.needs(s, 'password_safe_api_key_secret', 'with password_safe_url');
    check.needs(s, 'password_safe_runas', 'with password_safe_url');
  }
}
