import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MASK,
  REDACTOR_FAILED,
  type Redactor,
  safeRedactor,
} from '../../../../shared/domain/redaction/redactor.ts';
import { createRedactor } from '../../../../shared/domain/redaction.ts';

describe('safeRedactor', () => {
  /** Works for `goodCalls` pushes, then throws an error that quotes its input (as a careless one might). */
  function failingAfter(goodCalls: number): Redactor {
    let calls = 0;
    return {
      push(chunk) {
        calls++;
        if (calls > goodCalls) throw new Error(`cannot redact ${chunk}`);
        return chunk.toUpperCase();
      },
      flush() {
        throw new Error('flush failed');
      },
    };
  }

  it('withholds the rest of the stream once the redactor throws, and drops the error', () => {
    const r = safeRedactor(failingAfter(1));

    const outputs = [r.push('fine '), r.push('s3cret-1 '), r.push('s3cret-2'), r.flush()];

    expect(outputs).toEqual(['FINE ', `${REDACTOR_FAILED}\n`, '', '']);
    expect(outputs.join('')).not.toContain('s3cret');
    expect(r.failed).toBe(true);
  });

  it('withholds when flush throws, with the notice the caller chose', () => {
    const r = safeRedactor(failingAfter(5), '[withheld]');

    expect([r.push('a'), r.failed, r.flush(), r.failed, r.push('b')]).toEqual([
      'A',
      false,
      '[withheld]',
      true,
      '',
    ]);
  });

  it('passes a working redactor through untouched', () => {
    const r = safeRedactor(createRedactor(['hunter22']));

    expect(r.push('pw hunter') + r.push('22 ok') + r.flush()).toBe(`pw ${DEFAULT_MASK} ok`);
    expect(r.failed).toBe(false);
  });
});
