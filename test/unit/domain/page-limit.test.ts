import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../shared/domain/errors.ts';
import { checkLimit, limitError } from '../../../shared/domain/page-limit.ts';

describe('checkLimit', () => {
  it('accepts integers from 1 to the maximum', () => {
    expect(() => checkLimit(1, 100)).not.toThrow();
    expect(() => checkLimit(100, 100)).not.toThrow();
    expect(() => checkLimit(10_000)).not.toThrow();
  });

  it('refuses zero, negatives, fractions, NaN and values over the maximum, on the field limit', () => {
    for (const limit of [0, -1, 1.5, Number.NaN, 101]) {
      expect(() => checkLimit(limit, 100), String(limit)).toThrow(ValidationError);
    }
    expect(() => checkLimit(-1)).toThrow('limit must be a positive integer');
  });
});

describe('limitError', () => {
  it('names the range it expects', () => {
    expect(limitError(100).message).toBe('limit must be an integer from 1 to 100');
    expect(limitError(100).fields).toEqual([{ path: 'limit', message: 'must be an integer from 1 to 100' }]);
    expect(limitError().fields).toEqual([{ path: 'limit', message: 'must be a positive integer' }]);
  });
});
