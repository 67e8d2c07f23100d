import type { Run } from './run.ts';
import type { Target } from './target.ts';

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

/**
 * The Password Safe managed account a run checks out, or undefined when it
 * checks none out: a registered database's own account; for a VM run, its
 * `managedAccount` matched on the host. `<system>/<account>` names one
 * account for every host of a batch (their runs then take turns); a bare
 * account name is matched on each host's own managed system, the one named
 * by the address the runner connects to — `root` on a batch of `10.0.0.5`
 * and `10.0.0.6` checks out `10.0.0.5/root` and `10.0.0.6/root`.
 *
 * @example
 * managedAccountOf({ kind: 'vm', managedAccount: 'root' }, { kind: 'vm', address: 'web-01' }); // 'web-01/root'
 */
export function managedAccountOf(
  run: Pick<Run, 'kind' | 'managedAccount'>,
  target: Target | undefined,
): string | undefined {
  if (target?.kind === 'database') return target.source === 'registered' ? target.managedAccount : undefined;
  if (run.kind !== 'vm' || target?.kind !== 'vm' || run.managedAccount === undefined) return undefined;
  return run.managedAccount.includes('/') || target.address === undefined
    ? run.managedAccount
    : `${target.address}/${run.managedAccount}`;
}
