import { describe, expect, it } from 'vitest';
import { KeyedLock } from '../../../shared/lib/keyed-lock.ts';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('KeyedLock', () => {
  it('runs holders of one key one after another, in arrival order', async () => {
    const lock = new KeyedLock();
    const events: string[] = [];
    const holder = (name: string) =>
      lock.run('pod', async () => {
        events.push(`${name} in`);
        await tick();
        await tick();
        events.push(`${name} out`);
        return name;
      });
    const results = await Promise.all([holder('a'), holder('b'), holder('c')]);
    expect(results).toEqual(['a', 'b', 'c']);
    expect(events).toEqual(['a in', 'a out', 'b in', 'b out', 'c in', 'c out']);
  });

  it('lets different keys run at the same time', async () => {
    const lock = new KeyedLock();
    let releaseA: () => void = () => {};
    const a = lock.run('a', () => new Promise<void>((resolve) => (releaseA = resolve)));
    const b = await lock.run('b', async () => 'b ran while a held its lock');
    expect(b).toBe('b ran while a held its lock');
    releaseA();
    await a;
  });

  it('releases the lock when a holder fails', async () => {
    const lock = new KeyedLock();
    const failed = lock.run('k', async () => {
      throw new Error('boom');
    });
    const next = lock.run('k', async () => 'next');
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('next');
  });

  it('forgets a key once its queue is empty', async () => {
    const lock = new KeyedLock();
    const first = lock.run('k', tick);
    const second = lock.run('k', tick);
    expect(lock.size).toBe(1);
    await Promise.all([first, second]);
    expect(lock.size).toBe(0);
  });
});
