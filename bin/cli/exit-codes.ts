/**
 * Exit codes. A followed run's result: 0 succeeded, 1 failed, 2 refused,
 * 3 cancelled, 4 timed_out. The CLI's own failures use sysexits(3) codes so a
 * script can tell "the run failed" from "the request never got through".
 */
export const EXIT = {
  ok: 0,
  failed: 1,
  refused: 2,
  cancelled: 3,
  timedOut: 4,
  /** Bad arguments (EX_USAGE). */
  usage: 64,
  /** The API refused the request: validation, not found, conflict (EX_DATAERR). */
  requestRefused: 65,
  /** The API could not be reached or answered 5xx (EX_UNAVAILABLE). */
  unavailable: 69,
  /** The token is missing or wrong (EX_NOPERM). */
  unauthorized: 77,
} as const;

/** The exit code for a run that ended in `state`; a run still going is reported as failed to follow. */
export function exitCodeForState(state: string): number {
  switch (state) {
    case 'succeeded':
      return EXIT.ok;
    case 'refused':
      return EXIT.refused;
    case 'cancelled':
      return EXIT.cancelled;
    case 'timed_out':
      return EXIT.timedOut;
    default:
      return EXIT.failed;
  }
}

/** The exit code for an API error status. */
export function exitCodeForStatus(status: number): number {
  if (status === 401 || status === 403) return EXIT.unauthorized;
  if (status >= 500) return EXIT.unavailable;
  return EXIT.requestRefused;
}
