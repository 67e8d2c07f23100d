/** Password Safe's limit on a request's duration (a year). */
export const MAX_CHECKOUT_MINUTES = 525_600;

/**
 * How long to check a managed account out for: the configured minutes
 * (`password_safe_checkout_minutes`), or the time the run may take when that
 * is longer, so the credential never expires under a running play; capped at
 * Password Safe's limit.
 *
 * @example
 * checkoutMinutes(60, 3 * 3600); // 180
 */
export function checkoutMinutes(configuredMinutes: number, runSeconds: number): number {
  return Math.min(MAX_CHECKOUT_MINUTES, Math.max(configuredMinutes, Math.ceil(runSeconds / 60)));
}
