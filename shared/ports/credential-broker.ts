/**
 * Just-in-time checkout of a managed account (BeyondTrust Password Safe for
 * registered databases). A checkout is a lease: it is checked in when the run
 * ends — success, failure, cancel or timeout — and the credential is never
 * persisted. Only the lease id (not a secret) may be stored.
 *
 * @example
 * const lease = await broker.checkout({ account: 'pg-prod-01/dbadmin', reason: 'run r-1', durationMinutes: 60 });
 * try { use(lease.username, lease.password); } finally { await broker.checkin(lease.id); }
 */
export interface CheckoutRequest {
  /** `<system name>/<account name>`, or just the account name when it is unique. */
  readonly account: string;
  /** Recorded with the request in Password Safe (the run id). */
  readonly reason: string;
  readonly durationMinutes: number;
}

export interface Lease {
  /** Opaque, not secret: what `checkin` needs. */
  readonly id: string;
  readonly username: string;
  readonly password: string;
}

export interface CredentialBroker {
  checkout(request: CheckoutRequest): Promise<Lease>;
  /** Idempotent: checking in a lease that is already checked in (or expired) succeeds. */
  checkin(leaseId: string): Promise<void>;
}
