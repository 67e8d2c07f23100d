import type { CheckoutRequest, CredentialBroker, Lease } from '../../shared/ports/credential-broker.ts';
/**
 * Check an account out, hand the lease to `use`, and check it in again
 * however `use` ends — the try/finally every database run needs. `use`'s
 * outcome always wins: a failed check-in after a successful `use` is thrown
 * only when no `onCheckinError` is given, and after a failed `use` it is
 * reported to `onCheckinError` (the lease still expires by itself in
 * Password Safe after its duration).
 *
 * @example
 * const exitCode = await withCheckedOutAccount(broker, { account, reason: run.id, durationMinutes }, (lease) =>
 *   runPlay({ db_login_user: lease.username }, { db_login_password: lease.password }),
 * );
 */
export async function withCheckedOutAccount<T>(
  broker: CredentialBroker,
  request: CheckoutRequest,
  use: (lease: Lease) => Promise<T>,
  options: { readonly onCheckinError?: (error: unknown, leaseId: string) => void } = {},
): Promise<T> {
  const lease = await broker.checkout(request);
  let result: T;
  try {
    result = await use(lease);
  } catch (error) {
    await broker
      .checkin(lease.id)
      .catch((checkinError: unknown) => options.onCheckinError?.(checkinError, lease.id));
    throw error;
  }
  try {
    await broker.checkin(lease.id);
  } catch (error) {
    if (options.onCheckinError === undefined) throw error;
    options.onCheckinError(error, lease.id);
  }
  return result;
}
