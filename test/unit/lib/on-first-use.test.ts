import { describe, expect, it } from 'vitest';
import { onFirstUse } from '../../../shared/lib/on-first-use.ts';

describe('onFirstUse', () => {
  it('loads once for every caller, concurrent ones included', async () => {
    let loads = 0;
    const get = onFirstUse(async () => {
      loads += 1;
      return { n: loads };
    });

    const [a, b] = await Promise.all([get(), get()]);
    const c = await get();

    expect(loads).toBe(1);
    expect(a).toBe(b);
    expect(c).toBe(a);
  });

  it('does not keep a failed load: the next call tries again', async () => {
    let loads = 0;
    const get = onFirstUse(async () => {
      loads += 1;
      if (loads === 1) throw new Error('SDK import failed');
      return 'loaded';
    });

    await expect(get()).rejects.toThrow('SDK import failed');
    expect(await get()).toBe('loaded');
    expect(loads).toBe(2);
  });
});
