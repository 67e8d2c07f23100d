import { ValidationError } from '../domain/errors.ts';

/**
 * SQS's limits, in one place for both WorkQueue adapters: the SQS queue checks
 * them before the call so a bad value is a ValidationError, and the SQLite
 * queue keeps them so code written against local mode does not break on AWS.
 *
 * @example
 * checkSendBatch(bodies); // throws ValidationError('bodies must hold 1 to 10 messages') for 11
 */
export const MAX_DELAY_SECONDS = 900;
export const MAX_VISIBILITY_SECONDS = 43_200;
const MAX_WAIT_SECONDS = 20;
const MAX_BATCH = 10;
const MAX_BODY_BYTES = 256 * 1024;

export function invalid(path: string, message: string): ValidationError {
  return new ValidationError(`${path} ${message}`, [{ path, message }]);
}

export function checkSeconds(path: string, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw invalid(path, `must be an integer from 0 to ${max}`);
  }
}

export function checkBody(body: string, path: string): void {
  if (body.length === 0) throw invalid(path, 'must not be empty');
  if (Buffer.byteLength(body, 'utf8') > MAX_BODY_BYTES) {
    throw invalid(path, `must be at most ${MAX_BODY_BYTES} bytes`);
  }
}

/** SendMessageBatch: 1 to 10 bodies, each one a valid body. */
export function checkSendBatch(bodies: readonly string[]): void {
  if (bodies.length < 1 || bodies.length > MAX_BATCH) {
    throw invalid('bodies', `must hold 1 to ${MAX_BATCH} messages`);
  }
  bodies.forEach((body, i) => {
    checkBody(body, `bodies[${i}]`);
  });
}

/** ReceiveMessage: `max` from 1 to 10, a wait up to 20 s. */
export function checkReceive(max: number, waitSeconds: number): void {
  if (!Number.isInteger(max) || max < 1 || max > MAX_BATCH) {
    throw invalid('max', `must be an integer from 1 to ${MAX_BATCH}`);
  }
  checkSeconds('waitSeconds', waitSeconds, MAX_WAIT_SECONDS);
}
