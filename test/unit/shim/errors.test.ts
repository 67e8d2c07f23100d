import { describe, expect, it } from 'vitest';
import { orShimError, ShimError } from '../../../runners/shim/errors.ts';

describe('ShimError', () => {
  it('exits 125 unless told otherwise', () => {
    expect(new ShimError('bad spec').exitCode).toBe(125);
    expect(new ShimError('no kubectl', 127)).toMatchObject({ name: 'ShimError', exitCode: 127 });
  });
});

describe('orShimError', () => {
  it("answers the function's value, and turns a plain Error into a ShimError with its message", () => {
    expect(orShimError(() => 42)).toBe(42);
    expect(() =>
      orShimError(() => {
        throw new Error('not mounted');
      }),
    ).toThrow(new ShimError('not mounted'));
  });

  it('keeps a ShimError as it is, exit code included', () => {
    const original = new ShimError('missing', 127);

    let caught: unknown;
    try {
      orShimError(() => {
        throw original;
      });
    } catch (error) {
      caught = error;
    }

    expect(caught).toBe(original);
  });
});
