import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MASK,
  REDACTOR_FAILED,
  type Redactor,
  ScanOutput,
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

describe('ScanOutput', () => {
  it('keeps the leftmost candidate, the longest for its start', () => {
    const o = new ScanOutput('abcdef');

    o.offer(0, 2);
    expect(o.start).toBe(-1);
    o.offer(2, 4); // [2, 4)
    o.offer(1, 5); // [4, 5): starts later, ignored
    o.offer(3, 5); // [2, 5): same start, longer
    expect([o.start, o.end]).toEqual([2, 5]);
    o.offer(5, 6); // [1, 6): starts earlier
    expect([o.start, o.end]).toEqual([1, 6]);
  });

  it('decides a candidate once nothing in progress can start at or before it, or the text is over', () => {
    const o = new ScanOutput('abcdef');
    o.offer(2, 4);

    expect(o.decided(4, 2, true)).toBe(false);
    expect(o.decided(5, 2, true)).toBe(true);
    expect(o.decided(4, 3, false)).toBe(true);
    expect(new ScanOutput('x').decided(1, 0, false)).toBe(false);
  });

  it('masks what it commits, and returns or holds back the rest', () => {
    const o = new ScanOutput('say secret now');
    o.offer(6, 10);
    o.commit(o.start, o.end, DEFAULT_MASK);

    expect(o.start).toBe(-1);
    expect(o.result(true, 0)).toEqual({ out: `say ${DEFAULT_MASK} now`, rest: '' });
    expect(o.result(false, 12)).toEqual({ out: `say ${DEFAULT_MASK} n`, rest: 'ow' });
    // Never holds back what was already written.
    expect(o.result(false, 3)).toEqual({ out: `say ${DEFAULT_MASK}`, rest: ' now' });
  });
});
