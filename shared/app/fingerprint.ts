import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

/**
 * Stable hash of what a client asked for, so an Idempotency-Key reused for
 * another request is caught while a retry of the same one is not. The value
 * is canonicalised first (RFC 8785: keys sorted recursively, one number
 * form), as Powertools' idempotency `deepSort`s a payload before hashing it:
 * JSON object members have no order, so `{ a, b }` and `{ b, a }` are one request.
 *
 * @example
 * requestFingerprint({ a: 1, b: { c: 2, d: 3 } }) === requestFingerprint({ b: { d: 3, c: 2 }, a: 1 }); // true
 */
export function requestFingerprint(value: unknown): string {
  return createHash('sha256')
    .update(canonicalize(value) ?? '')
    .digest('base64url');
}
