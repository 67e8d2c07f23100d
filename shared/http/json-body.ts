import type { APIGatewayProxyEventV2 as HttpEvent } from 'aws-lambda';
import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from '../domain/errors.ts';

/** JSON bodies above this are refused before parsing (API Gateway allows 10 MB; nothing here needs it). */
export const MAX_BODY_BYTES = 256 * 1024;

/**
 * How deep objects and arrays may nest in a body. Extra vars of real plays
 * nest a handful of levels; code that walks a value recursively (validation,
 * masking, serialisation) overflows the stack somewhere past a few thousand.
 */
export const MAX_JSON_DEPTH = 32;

/** A lone UTF-16 surrogate: valid JSON text (`"\ud800"`) that no UTF-8 store or canonical form accepts. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Walk a parsed value with an explicit stack (a recursive walk would itself
 * overflow on the input it refuses) and refuse it when it nests deeper than
 * MAX_JSON_DEPTH or holds a lone surrogate.
 */
function checkShape(value: unknown): void {
  const stack: [unknown, number][] = [[value, 0]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [item, depth] = next;
    if (typeof item === 'string') {
      if (LONE_SURROGATE.test(item)) {
        throw new ValidationError('The body holds a string with a lone UTF-16 surrogate', [
          { path: 'body', message: 'lone surrogate in a string' },
        ]);
      }
      continue;
    }
    if (typeof item !== 'object' || item === null) continue;
    if (depth >= MAX_JSON_DEPTH) {
      throw new ValidationError(`The body nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels`, [
        { path: 'body', message: `nested deeper than ${MAX_JSON_DEPTH} levels` },
      ]);
    }
    const children: unknown[] = Array.isArray(item) ? item : [...Object.keys(item), ...Object.values(item)];
    for (const child of children) stack.push([child, depth + 1]);
  }
}

/**
 * The request body as JSON, or undefined when there is none: 413 above
 * `limit` bytes, 415 unless the content type is JSON, 400 for text that is
 * not JSON, nests deeper than MAX_JSON_DEPTH or holds a lone surrogate.
 *
 * @example
 * readJsonBody({ ...event, body: '{"kind":"vm"}', headers: { 'content-type': 'application/json' } }, MAX_BODY_BYTES); // { kind: 'vm' }
 */
export function readJsonBody(event: HttpEvent, limit: number): unknown {
  if (event.body === undefined || event.body === '') return undefined;
  const raw = event.isBase64Encoded ? Buffer.from(event.body, 'base64') : Buffer.from(event.body, 'utf8');
  if (raw.byteLength > limit) {
    throw new PayloadTooLargeError(`The body is ${raw.byteLength} bytes; the limit is ${limit}`);
  }
  const type = (event.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type !== 'application/json' && !type.endsWith('+json')) {
    throw new UnsupportedMediaTypeError(
      `Send the body as application/json (got ${type || 'no content type'})`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    // V8's message quotes the text around the error, which may be a password: say only where.
    const at = /position (\d+)/.exec((error as Error).message)?.[1];
    throw new ValidationError(`The body is not valid JSON${at === undefined ? '' : ` (at byte ${at})`}`);
  }
  checkShape(value);
  return value;
}
