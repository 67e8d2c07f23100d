import { describe, expect, it } from 'vitest';
import { once } from '../../../shared/lib/once.ts';

describe('once', () => {
  it('makes the value on the first call and answers the same one after', () => {
    let makes = 0;
    const get = once(() => {
      makes += 1;
      return { n: makes };
    });

    expect(makes).toBe(0);
    const a = get();
    const b = get();

    expect(makes).toBe(1);
    expect(b).toBe(a);
  });

  it('keeps a falsy value rather than making it again', () => {
    let makes = 0;
    const get = once(() => {
      makes += 1;
      return undefined;
    });

    get();
    get();

    expect(makes).toBe(1);
  });

  it('does not keep a failed make: the next call tries again', () => {
    let makes = 0;
    const get = once(() => {
      makes += 1;
      if (makes === 1) throw new Error('no region configured');
      return 'client';
    });

    expect(() => get()).toThrow('no region configured');
    expect(get()).toBe('client');
    expect(makes).toBe(2);
  });
});
