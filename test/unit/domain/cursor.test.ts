import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeIdCursor,
  decodeJsonCursor,
  decodeSeqCursor,
  encodeIdCursor,
  encodeSeqCursor,
} from '../../../shared/domain/cursor.ts';
import { ValidationError } from '../../../shared/domain/errors.ts';

describe('id cursors', () => {
  it('round-trips every run id a store can hand out', () => {
    const id = fc.stringMatching(/^[\x21-\x7e]{1,128}$/);
    fc.assert(fc.property(id, (value) => decodeIdCursor(encodeIdCursor(value)) === value));
  });

  it('is base64url text, opaque to a client', () => {
    expect(encodeIdCursor('01RUN0000000000000000000A1')).toBe(
      Buffer.from('01RUN0000000000000000000A1').toString('base64url'),
    );
  });

  it('refuses junk, padding, empty and over-long positions with ValidationError on `cursor`', () => {
    const bad = [
      '',
      'not a cursor!',
      '%%%',
      `${encodeIdCursor('abc')}=`,
      encodeIdCursor('has space'),
      encodeIdCursor('x'.repeat(129)),
    ];
    for (const cursor of bad) {
      const error = (() => {
        try {
          decodeIdCursor(cursor);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error, cursor).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).fields).toEqual([{ path: 'cursor', message: 'invalid cursor' }]);
    }
  });
});

describe('sequence cursors', () => {
  it('round-trips every sequence number up to 15 digits', () => {
    const seq = fc.integer({ min: 0, max: 999_999_999_999_999 });
    fc.assert(fc.property(seq, (value) => decodeSeqCursor(encodeSeqCursor(value)) === value));
  });

  it('refuses negative, leading-zero, fractional, over-long and non-numeric positions', () => {
    const texts = ['-1', '01', '1.5', '1'.repeat(16), 'abc', ''];
    for (const text of texts) {
      expect(() => decodeSeqCursor(Buffer.from(text).toString('base64url')), text).toThrow(ValidationError);
    }
    expect(() => decodeSeqCursor('%%%')).toThrow(ValidationError);
  });
});

describe('JSON cursors', () => {
  const cursorOf = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

  it('hands back the object a log reader encoded', () => {
    expect(decodeJsonCursor(cursorOf('{"g":1,"p":2}'))).toEqual({ g: 1, p: 2 });
  });

  it('refuses junk, arrays, null and scalars with ValidationError on `cursor`', () => {
    for (const text of ['not json', '[1,2]', 'null', '42', '"text"']) {
      expect(() => decodeJsonCursor(cursorOf(text)), text).toThrow(ValidationError);
    }
  });
});
