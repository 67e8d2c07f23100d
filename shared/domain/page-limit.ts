import { ValidationError } from './errors.ts';

/**
 * The error for a page `limit` out of range, on the field `limit`: "from 1 to
 * `max`" with a maximum, "a positive integer" without one.
 */
export function limitError(max?: number): ValidationError {
  const rule = max === undefined ? 'a positive integer' : `an integer from 1 to ${max}`;
  return new ValidationError(`limit must be ${rule}`, [{ path: 'limit', message: `must be ${rule}` }]);
}

/**
 * Throws {@link limitError} unless `limit` is an integer from 1 to `max` (any
 * positive integer without `max`). Stores check before they query: SQLite
 * reads a negative LIMIT as "no limit".
 *
 * @example
 * checkLimit(query.limit, 100); // listRuns
 * checkLimit(limit); // listActiveRuns
 */
export function checkLimit(limit: number, max?: number): void {
  if (!Number.isInteger(limit) || limit < 1 || (max !== undefined && limit > max)) throw limitError(max);
}
