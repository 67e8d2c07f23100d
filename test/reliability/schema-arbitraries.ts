import fc from 'fast-check';

/*
 * fast-check arbitraries derived from the JSON Schemas of an OpenAPI 3.1
 * document (the subset shared/http/openapi.ts emits: $ref, const, enum,
 * oneOf, string length/pattern/format, integer bounds, arrays, objects with
 * required and additionalProperties). `valid` draws values the schema
 * accepts; `invalid` draws values it refuses, each wrong in one place — the
 * wrong type, a missing required field, an extra field, a value past a bound,
 * a pattern miss — so a refusal can be traced to one cause.
 */

export type Schema = { readonly [key: string]: any };

/** What the schema cannot say: values that name things that exist (targets, assets), by property name. */
export type Known = Readonly<Record<string, fc.Arbitrary<unknown>>>;

export interface SchemaContext {
  readonly doc: Schema;
  readonly known: Known;
}

const MAX_ITEMS = 4;
const MAX_STRING = 24;

export function resolve(schema: Schema, doc: Schema): Schema {
  let s = schema;
  while (typeof s.$ref === 'string') {
    const path = (s.$ref as string).replace(/^#\//, '').split('/');
    s = path.reduce<any>((node, key) => node?.[key], doc) ?? {};
  }
  return s;
}

/** Any JSON value, small: what `additionalProperties: {}` allows. */
const anyJson = fc.jsonValue({ maxDepth: 2 });

function stringArb(s: Schema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = Math.min(s.maxLength ?? MAX_STRING, Math.max(min, MAX_STRING));
  if (s.format === 'uri') return fc.webUrl();
  if (s.format === 'base64') return fc.base64String({ maxLength: 64 });
  if (typeof s.pattern === 'string') {
    return fc
      .stringMatching(new RegExp(s.pattern))
      .filter((v) => v.length >= min && v.length <= (s.maxLength ?? Number.POSITIVE_INFINITY));
  }
  return fc.string({ minLength: min, maxLength: max, unit: 'grapheme-ascii' });
}

export function valid(schema: Schema, ctx: SchemaContext): fc.Arbitrary<unknown> {
  const s = resolve(schema, ctx.doc);
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  if (Array.isArray(s.oneOf)) return fc.oneof(...s.oneOf.map((o: Schema) => valid(o, ctx)));
  if (Array.isArray(s.anyOf)) return fc.oneof(...s.anyOf.map((o: Schema) => valid(o, ctx)));
  switch (s.type) {
    case 'string':
      return stringArb(s);
    case 'integer':
      return fc.integer({ min: s.minimum ?? -1_000_000, max: Math.min(s.maximum ?? 1_000_000, 2 ** 31 - 1) });
    case 'number':
      return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(valid(s.items ?? {}, ctx), {
        minLength: s.minItems ?? 0,
        maxLength: Math.min(s.maxItems ?? MAX_ITEMS, Math.max(s.minItems ?? 0, MAX_ITEMS)),
      });
    case 'object':
      return objectArb(s, ctx);
    default:
      return anyJson;
  }
}

function objectArb(s: Schema, ctx: SchemaContext): fc.Arbitrary<Record<string, unknown>> {
  const properties: Record<string, Schema> = s.properties ?? {};
  const required: string[] = s.required ?? [];
  if (Object.keys(properties).length === 0) {
    const values = s.additionalProperties === false ? fc.constant(undefined) : anyJson;
    return fc.dictionary(stringArb(s.propertyNames ?? { type: 'string', maxLength: 12 }), values, {
      maxKeys: 3,
    }) as fc.Arbitrary<Record<string, unknown>>;
  }
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, prop] of Object.entries(properties)) {
    const known = ctx.known[key];
    model[key] =
      known === undefined ? valid(prop, ctx) : fc.oneof({ weight: 3, arbitrary: known }, valid(prop, ctx));
  }
  return fc.record(model, { requiredKeys: required });
}

/** A JSON value of another type than the schema wants. */
function wrongType(s: Schema): fc.Arbitrary<unknown> {
  const all: Record<string, fc.Arbitrary<unknown>> = {
    string: fc.string({ maxLength: 8 }),
    integer: fc.integer(),
    number: fc.double({ noNaN: true, noDefaultInfinity: true }),
    boolean: fc.boolean(),
    null: fc.constant(null),
    array: fc.array(fc.integer(), { maxLength: 2 }),
    object: fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
  };
  const type: string | undefined = s.type;
  const others = Object.entries(all)
    .filter(
      ([t]) =>
        t !== type && !(type === 'number' && t === 'integer') && !(type === 'integer' && t === 'number'),
    )
    .map(([, a]) => a);
  return fc.oneof(...others);
}

/** Strings that break a string schema's rules, and strings that are hostile whatever the rules. */
function badString(s: Schema): fc.Arbitrary<unknown> {
  const options: fc.Arbitrary<unknown>[] = [
    fc.constantFrom(
      '\u0000',
      '\ud800',
      'a\udfffb',
      '\u202e',
      '\ufeff',
      ' ',
      '../../etc/passwd',
      '%00',
      '\r\n',
    ),
    // Huge: far past every length limit the API has, below the body size limit.
    fc.integer({ min: 1_000, max: 60_000 }).map((n) => 'x'.repeat(n)),
  ];
  if (typeof s.maxLength === 'number') options.push(fc.constant('y'.repeat(s.maxLength + 1)));
  if ((s.minLength ?? 0) > 0) options.push(fc.constant(''));
  if (Array.isArray(s.enum)) options.push(fc.string({ maxLength: 10 }).filter((v) => !s.enum.includes(v)));
  if ('const' in s) options.push(fc.string({ maxLength: 10 }).filter((v) => v !== s.const));
  if (typeof s.pattern === 'string') {
    const re = new RegExp(s.pattern);
    options.push(fc.string({ minLength: 1, maxLength: 20 }).filter((v) => !re.test(v)));
  }
  return fc.oneof(...options);
}

function badNumber(s: Schema): fc.Arbitrary<unknown> {
  const options: fc.Arbitrary<unknown>[] = [
    fc.constantFrom(1.5, -0.5, 1e308, -1e308, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER * 10),
    fc.integer().map(String),
  ];
  if (typeof s.minimum === 'number') options.push(fc.constant(s.minimum - 1));
  if (typeof s.maximum === 'number') options.push(fc.constant(s.maximum + 1));
  return fc.oneof(...options);
}

/** A value the schema refuses, wrong in exactly one place. */
export function invalid(schema: Schema, ctx: SchemaContext): fc.Arbitrary<unknown> {
  const s = resolve(schema, ctx.doc);
  if (Array.isArray(s.oneOf)) {
    // Wrong for every branch at once is hard to say in general; wrong type always is, and so is
    // a branch's object with one thing wrong (its discriminator then picks it, or none matches).
    return fc.oneof(wrongType({ type: 'object' }), ...s.oneOf.map((o: Schema) => invalid(o, ctx)));
  }
  const own: fc.Arbitrary<unknown>[] = [wrongType(s)];
  if ('const' in s || Array.isArray(s.enum) || s.type === 'string') own.push(badString(s));
  if (s.type === 'integer' || s.type === 'number') own.push(badNumber(s));
  if (s.type === 'array') {
    const items = s.items ?? {};
    own.push(
      fc
        .array(valid(items, ctx), { minLength: 1, maxLength: 3 })
        .chain((xs) => invalid(items, ctx).map((bad) => [...xs, bad])),
    );
    if (typeof s.maxItems === 'number')
      own.push(
        fc
          .constant(undefined)
          .chain(() => fc.array(valid(items, ctx), { minLength: s.maxItems + 1, maxLength: s.maxItems + 1 })),
      );
    if ((s.minItems ?? 0) > 0) own.push(fc.constant([]));
  }
  if (s.type === 'object' && s.properties !== undefined) own.push(...badObject(s, ctx));
  return fc.oneof(...own);
}

function badObject(s: Schema, ctx: SchemaContext): fc.Arbitrary<unknown>[] {
  const properties: Record<string, Schema> = s.properties ?? {};
  const required: string[] = s.required ?? [];
  const base = objectArb(s, ctx);
  const bad: fc.Arbitrary<unknown>[] = [];
  if (required.length > 0) {
    bad.push(
      fc.tuple(base, fc.constantFrom(...required)).map(([o, key]) => {
        const { [key]: _dropped, ...rest } = o;
        return rest;
      }),
    );
  }
  if (s.additionalProperties === false) {
    bad.push(
      fc
        .tuple(base, fc.string({ minLength: 1, maxLength: 12 }), anyJson)
        .filter(([, key]) => !(key in properties))
        .map(([o, key, v]) => ({ ...o, [key]: v })),
    );
  }
  const keys = Object.keys(properties);
  bad.push(
    fc
      .constantFrom(...keys)
      .chain((key) =>
        fc
          .tuple(base, fc.constant(key), invalid(properties[key] as Schema, ctx))
          .map(([o, k, v]) => ({ ...o, [k]: v })),
      ),
  );
  return bad;
}
