import { describe, expect, it } from 'vitest';
import { PayloadTooLargeError, ValidationError } from '../../../shared/domain/errors.ts';
import type { HttpEvent } from '../../../shared/http/handler.ts';
import { MAX_BODY_BYTES, MAX_JSON_DEPTH, readJsonBody } from '../../../shared/http/json-body.ts';

const event = (body: string, contentType = 'application/json'): HttpEvent =>
  ({ body, isBase64Encoded: false, headers: { 'content-type': contentType } }) as unknown as HttpEvent;

/** `levels` objects and arrays nested alternately around a number. */
const nested = (levels: number): string => {
  let text = '1';
  for (let i = 0; i < levels; i++) text = i % 2 === 0 ? `{"a":${text}}` : `[${text}]`;
  return text;
};

describe('readJsonBody', () => {
  it(`takes a body nested ${MAX_JSON_DEPTH} levels deep`, () => {
    expect(() => readJsonBody(event(nested(MAX_JSON_DEPTH)), MAX_BODY_BYTES)).not.toThrow();
  });

  it.each([MAX_JSON_DEPTH + 1, 1_000, 100_000])('refuses a body nested %i levels deep with 400', (levels) => {
    const read = () => readJsonBody(event(nested(levels)), 10 * MAX_BODY_BYTES);

    expect(read).toThrow(ValidationError);
    expect(read).toThrow(`The body nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels`);
  });

  it('refuses a string with a lone surrogate, in a value or a key', () => {
    expect(() => readJsonBody(event('{"a":"x\\ud800"}'), MAX_BODY_BYTES)).toThrow(ValidationError);
    expect(() => readJsonBody(event('{"\\udc00":1}'), MAX_BODY_BYTES)).toThrow(ValidationError);
  });

  it('takes a surrogate pair (an emoji)', () => {
    expect(readJsonBody(event('{"a":"\\ud83d\\udc18"}'), MAX_BODY_BYTES)).toEqual({ a: '🐘' });
  });

  it('does not quote the body when it is not JSON', () => {
    const read = () => readJsonBody(event('{"password": hunter2}'), MAX_BODY_BYTES);

    expect(read).toThrow(ValidationError);
    expect(read).not.toThrow(/hunter2/);
  });

  it('refuses a body above the limit with 413 and a body that is not JSON with 415', () => {
    expect(() => readJsonBody(event('"xxxx"'), 3)).toThrow(PayloadTooLargeError);
    expect(() => readJsonBody(event('{}', 'text/plain'), MAX_BODY_BYTES)).toThrow(
      'Send the body as application/json (got text/plain)',
    );
  });
});
