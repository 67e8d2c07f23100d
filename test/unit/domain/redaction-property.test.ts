import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createRedactor,
  DEFAULT_MASK,
  redactAll,
  redactionPatterns,
} from '../../../shared/domain/redaction.ts';
import { oracleRedact } from '../../support/redaction-oracle.ts';

/**
 * Property tests of the redactor against forms computed here, independently
 * of redaction.ts: secrets with unicode, quotes, backslashes, newlines and
 * two-character values, embedded in random text in the forms tools print,
 * fed through random chunkings.
 */

/** Cut `text` at the given sizes (cycled; any code unit, so surrogate pairs may be split too). */
function chunked(text: string, sizes: readonly number[]): string[] {
  const chunks: string[] = [];
  for (let i = 0, k = 0; i < text.length; k++) {
    const size = Math.max(1, sizes[k % sizes.length] ?? 1);
    chunks.push(text.slice(i, i + size));
    i += size;
  }
  return chunks;
}

function streamThrough(secrets: readonly string[], chunks: readonly string[]): string {
  const r = createRedactor(secrets);
  return chunks.map((c) => r.push(c)).join('') + r.flush();
}

const codePoints = (s: string): number => [...s].length;

// Everything but the mask character: a value made of `*` is rebuilt by adjacent masks (documented).
const specialChar = fc.constantFrom(...'abcXYZ019\'"\\\n\t $`!&<>/+=%~:;,é中🔑'.split(/(?:)/u));
const anyChar = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }).filter((c) => !c.includes('*'));
const secretUnit = fc.oneof({ weight: 5, arbitrary: specialChar }, { weight: 1, arbitrary: anyChar });
const secretArb = fc.oneof(
  fc.tuple(secretUnit, secretUnit).map(([a, b]) => a + b),
  fc.string({ unit: secretUnit, minLength: 2, maxLength: 16 }).filter((s) => codePoints(s) >= 2),
);
const noiseArb = fc.string({ unit: fc.constantFrom(...'abc xyz019:"\'\\\n=-/é'.split('')), maxLength: 12 });
const sizesArb = fc.array(fc.integer({ min: 1, max: 24 }), { minLength: 1, maxLength: 8 });

const base64Char = /[A-Za-z0-9+/]/;
const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

/** Textual forms of a value as tools print it, computed here (not by redaction.ts). */
function textualForms(value: string): string[] {
  const forms = [
    value,
    JSON.stringify(value).slice(1, -1),
    JSON.stringify(value)
      .slice(1, -1)
      .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
    `'${value.replaceAll("'", `'\\''`)}'`,
    `'${value.replaceAll("'", `'"'"'`)}'`,
    `"${value.replace(/[\\"$`]/g, (c) => `\\${c}`)}"`,
    new URLSearchParams({ v: value }).toString().slice(2),
  ];
  try {
    forms.push(encodeURIComponent(value), encodeURIComponent(value).replaceAll('%20', '+'));
  } catch {
    // A lone surrogate has no URL encoding.
  }
  return forms;
}

/** The values the redactor must treat as secrets of their own: the value, trimmed, and each line (≥ 2 characters). */
function derivedValues(secret: string): string[] {
  return [secret, secret.trim(), ...secret.split(/\r\n|\r|\n/).map((l) => l.trim())].filter(
    (v) => codePoints(v) >= 2,
  );
}

type Embedding =
  | { readonly kind: 'textual'; readonly secret: number; readonly form: number; readonly part: number }
  | { readonly kind: 'base64'; readonly secret: number; readonly before: string; readonly after: string };

const embeddingArb = (count: number): fc.Arbitrary<Embedding> =>
  fc.oneof(
    fc.record({
      kind: fc.constant('textual' as const),
      secret: fc.nat(count - 1),
      form: fc.nat(8),
      part: fc.nat(5),
    }),
    fc.record({
      kind: fc.constant('base64' as const),
      secret: fc.nat(count - 1),
      before: fc.string({ maxLength: 3 }),
      after: fc.string({ maxLength: 3 }),
    }),
  );

function render(secrets: readonly string[], e: Embedding): string {
  const secret = secrets[e.secret] ?? '';
  if (e.kind === 'base64') return utf8(`${e.before}${secret}${e.after}`).toString('base64');
  const values = derivedValues(secret);
  const forms = textualForms(values[e.part % values.length] ?? secret);
  return forms[e.form % forms.length] ?? secret;
}

const scenarioArb = fc.array(secretArb, { minLength: 1, maxLength: 4 }).chain((secrets) =>
  fc.record({
    secrets: fc.constant(secrets),
    text: fc
      .array(fc.tuple(noiseArb, embeddingArb(secrets.length)), { maxLength: 6 })
      .chain((parts) =>
        noiseArb.map((tail) => parts.map(([noise, e]) => noise + render(secrets, e)).join('') + tail),
      ),
    chunkings: fc.array(sizesArb, { minLength: 2, maxLength: 3 }),
  }),
);

/** Whether the secret's bytes can be read back from any base64 run in `text`, at any alignment. */
function decodableFromBase64(text: string, secret: string): boolean {
  const needle = utf8(secret);
  let run = '';
  const runs: string[] = [];
  for (const c of `${text}\0`) {
    if (base64Char.test(c)) {
      run += c;
    } else {
      if (run.length >= 4) runs.push(run);
      run = '';
    }
  }
  return runs.some((r) =>
    [0, 1, 2, 3].some((offset) => {
      const aligned = r.slice(offset);
      return Buffer.from(aligned.slice(0, aligned.length - (aligned.length % 4)), 'base64').includes(needle);
    }),
  );
}

describe('redactor properties', () => {
  it('(a) gives the same output for every chunking, equal to the one-shot oracle', () => {
    fc.assert(
      fc.property(scenarioArb, ({ secrets, text, chunkings }) => {
        const expected = oracleRedact(secrets, text);

        expect(redactAll(text, secrets)).toBe(expected);
        for (const sizes of chunkings) expect(streamThrough(secrets, chunked(text, sizes))).toBe(expected);
        expect(streamThrough(secrets, [...text])).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('(b) lets no form of any secret through', () => {
    fc.assert(
      fc.property(scenarioArb, ({ secrets, text, chunkings }) => {
        const out = streamThrough(secrets, chunked(text, chunkings[0] ?? [1]));

        for (const secret of secrets) {
          for (const value of derivedValues(secret)) {
            for (const form of textualForms(value)) {
              expect(out.includes(form), `form ${JSON.stringify(form)} is in the output`).toBe(false);
            }
          }
          // Base64 fragments shorter than 4 characters are not masked (documented): check values of 4+ bytes.
          if (utf8(secret).length >= 4) expect(decodableFromBase64(out, secret)).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('(c) passes text with no secret in it through unchanged', () => {
    fc.assert(
      fc.property(
        fc.array(secretArb, { maxLength: 4 }),
        fc.string({ unit: 'grapheme', maxLength: 120 }),
        sizesArb,
        (secrets, text, sizes) => {
          fc.pre(!redactionPatterns(secrets).some((p) => text.includes(p)));

          expect(streamThrough(secrets, chunked(text, sizes))).toBe(text);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('(d) never masks anything for empty or one-character values', () => {
    const shortValue = fc.oneof(
      fc.constant(''),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }).filter((c) => codePoints(c) === 1),
      fc.constantFrom('a', ' ', '\n', '"', '\\', '🔑', '\ud800'),
    );
    fc.assert(
      fc.property(
        fc.array(shortValue, { minLength: 1, maxLength: 5 }),
        fc.array(secretArb, { maxLength: 2 }),
        fc.string({ unit: 'grapheme', maxLength: 80 }),
        sizesArb,
        (shorts, secrets, text, sizes) => {
          const withShort = [...secrets, ...shorts];

          expect(redactionPatterns(shorts)).toEqual([]);
          expect(streamThrough(shorts, chunked(text, sizes))).toBe(text);
          expect(streamThrough(withShort, chunked(text, sizes))).toBe(redactAll(text, secrets));
        },
      ),
      { numRuns: 300 },
    );
  });
});
