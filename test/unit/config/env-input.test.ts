import { describe, expect, it } from 'vitest';
import * as classic from 'zod';
import { envInputOf, SETTING_SHAPE, type SettingKey } from '../../../shared/config/load-settings.ts';
import * as z from '../../../shared/lib/zod.ts';

/** What load-settings made of the JSON Schema's `type` before envInputOf read the definition instead. */
const fromJsonSchema = (schema: z.core.$ZodType): string => {
  const type = classic.toJSONSchema(schema, { io: 'input' }).type;
  if (type === 'integer' || type === 'number') return 'number';
  if (type === 'boolean' || type === 'object') return type;
  return 'text';
};

describe('envInputOf', () => {
  it('answers, for every settings key, what the key’s JSON Schema says its input is', () => {
    const keys = Object.keys(SETTING_SHAPE) as SettingKey[];
    expect(keys.length).toBeGreaterThan(50);
    const mismatches = keys.filter((key) => {
      const schema = SETTING_SHAPE[key]();
      return envInputOf(schema) !== fromJsonSchema(schema);
    });
    expect(mismatches).toEqual([]);
    // Every kind of answer occurs, so the comparison above covers each branch.
    const kinds = new Set(keys.map((key) => envInputOf(SETTING_SHAPE[key]())));
    expect([...kinds].sort()).toEqual(['boolean', 'number', 'object', 'text']);
  });

  it('looks through wrappers and pipes, and takes no single type of a union or a nullable', () => {
    expect(envInputOf(z._default(z.optional(z.int()), 3))).toBe('number');
    expect(
      envInputOf(
        z.pipe(
          z.record(z.string(), z.string()),
          z.transform((v) => v),
        ),
      ),
    ).toBe('object');
    expect(envInputOf(z.lazy(() => z.boolean()))).toBe('boolean');
    expect(envInputOf(z.union([z.int(), z.string()]))).toBe('text');
    expect(envInputOf(z.nullable(z.int()))).toBe('text');
    expect(envInputOf(z.enum(['a', 'b']))).toBe('text');
  });
});
