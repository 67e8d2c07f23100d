import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestFingerprint } from '../../../shared/app/fingerprint.ts';

type Pick = (max: number) => number;

/** The same JSON value with every object's members in another order, as `pick` chooses. */
function reorder(value: unknown, pick: Pick): unknown {
  if (Array.isArray(value)) return value.map((v) => reorder(v, pick));
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value);
  for (let i = entries.length - 1; i > 0; i--) {
    const j = pick(i);
    [entries[i], entries[j]] = [entries[j]!, entries[i]!];
  }
  return Object.fromEntries(entries.map(([k, v]) => [k, reorder(v, pick)]));
}

const body = fc.dictionary(fc.string({ minLength: 1 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 8 });

describe('requestFingerprint', () => {
  it('is the same for any order of the keys, at every depth', () => {
    fc.assert(
      fc.property(body, fc.gen(), (value, gen) => {
        const shuffled = reorder(value, (max) => gen(fc.nat, { max }));

        expect(requestFingerprint(shuffled)).toBe(requestFingerprint(value));
      }),
      { numRuns: 300 },
    );
  });

  it('treats a nested object in another key order as the same request', () => {
    const sent = { kind: 'vm', extraVars: { app: { name: 'web', port: 80 }, env: 'prod' } };
    const retried = { extraVars: { env: 'prod', app: { port: 80, name: 'web' } }, kind: 'vm' };

    expect(requestFingerprint(retried)).toBe(requestFingerprint(sent));
  });

  it('differs when any value differs', () => {
    fc.assert(
      fc.property(body, fc.string({ minLength: 1 }), fc.jsonValue(), (value, key, extra) => {
        fc.pre(!(key in value) || JSON.stringify(value[key]) !== JSON.stringify(extra));
        const changed = { ...value, [key]: extra };

        expect(requestFingerprint(changed)).not.toBe(requestFingerprint(value));
      }),
      { numRuns: 300 },
    );
  });
});
