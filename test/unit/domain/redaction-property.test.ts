import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createRedactor,
  DEFAULT_MASK,
  redactAll,
  redactionPatterns,
} from '../../../shared/domain/redaction.ts';
import { oracleRedact, readableBytes } from '../../support/redaction-oracle.ts';

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

/**
 * Wrapped dumps. "Caught" means: no byte of the secret can be read back from
 * the redacted output where its byte grid is known — before the first and
 * after the last mask of every line (see readableBytes) — and nothing is left
 * between two masks. The secret's characters and the surrounding text use
 * disjoint sets of bytes, so a readable secret byte is a leak and never a
 * coincidence: N = 1 byte, the strictest bound there is. It holds because a
 * mask covers every character that depends only on the secret's bytes; the
 * characters at the edges of a base64 mask carry 2 or 4 bits of the first or
 * last secret byte, never a whole one. Secrets are 6 characters or more: every
 * base64 form is then at least 8 characters and every hex form 12 digits, so a
 * form of the secret appearing in the surrounding text by chance (which would
 * mask more, and fail the unchanged-text property) is out of reach (64⁻⁸).
 */
const secretDumpChar = fc.constantFrom(...'ABCDEFGHJKMNPQRSTUVWXYZ0123456789éü🔑'.split(/(?:)/u));
const noiseDumpChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz .:=-_\n'.split(''));
const secretDumpArb = fc.string({ unit: secretDumpChar, minLength: 6, maxLength: 40 });
const noiseDumpArb = fc.string({ unit: noiseDumpChar, maxLength: 90 });
const secretBytes = (secret: string): Set<number> => new Set(utf8(secret));

type Dump =
  | { readonly kind: 'base64'; readonly width: 64 | 76; readonly crlf: boolean }
  | { readonly kind: 'hex-plain'; readonly upper: boolean; readonly crlf: boolean }
  | { readonly kind: 'hex-od'; readonly upper: boolean; readonly crlf: boolean };

const dumpArb: fc.Arbitrary<Dump> = fc.oneof(
  fc.record({
    kind: fc.constant('base64' as const),
    width: fc.constantFrom(64 as const, 76 as const),
    crlf: fc.boolean(),
  }),
  fc.record({
    kind: fc.constantFrom('hex-plain' as const, 'hex-od' as const),
    upper: fc.boolean(),
    crlf: fc.boolean(),
  }),
);

/** `base64 -w W`, `xxd -p` (60 digits a line) and `od -An -tx1` (16 bytes a line, each after a space), computed here. */
function dump(bytes: Buffer, how: Dump): string {
  const lines = (text: string, width: number): string[] =>
    text.match(new RegExp(`.{1,${width}}`, 'gs')) ?? [];
  let out: string[];
  if (how.kind === 'base64') {
    out = lines(bytes.toString('base64'), how.width);
  } else {
    const hex = how.upper ? bytes.toString('hex').toUpperCase() : bytes.toString('hex');
    out =
      how.kind === 'hex-plain' ? lines(hex, 60) : lines(hex, 32).map((line) => line.replace(/(..)/g, ' $1'));
  }
  return out.map((line) => `${line}${how.crlf ? '\r\n' : '\n'}`).join('');
}

const encodingOf = (how: Dump): 'base64' | 'hex' => (how.kind === 'base64' ? 'base64' : 'hex');

describe('redactor properties: wrapped base64 and hex dumps', () => {
  it('(e) leaves no byte of the secret readable, whatever the wrap, line end, alignment and chunking', () => {
    fc.assert(
      fc.property(
        secretDumpArb,
        noiseDumpArb,
        noiseDumpArb,
        dumpArb,
        sizesArb,
        (secret, before, after, how, sizes) => {
          const text = dump(utf8(`${before}${secret}${after}`), how);

          const out = streamThrough([secret], chunked(text, sizes));

          const { bytes, between } = readableBytes(out, encodingOf(how));
          const leaked = [...bytes].filter((b) => secretBytes(secret).has(b));
          expect(leaked, `readable secret bytes in ${JSON.stringify(out)}`).toEqual([]);
          expect(between).toEqual([]);
          expect(out).toContain(DEFAULT_MASK);
          // The dump keeps its lines: masks never join two of them.
          expect(out.split('\n').length).toBe(text.split('\n').length);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('(f) gives the oracle’s output for every chunking', () => {
    fc.assert(
      fc.property(
        secretDumpArb,
        fc.array(fc.tuple(noiseDumpArb, dumpArb, fc.boolean()), { minLength: 1, maxLength: 3 }),
        fc.array(sizesArb, { minLength: 2, maxLength: 3 }),
        (secret, blocks, chunkings) => {
          // Several dumps, each of some text with or without the secret, in one stream.
          const text = blocks
            .map(([noise, how, withSecret]) => dump(utf8(withSecret ? noise + secret : noise), how))
            .join('x=\n');
          const expected = oracleRedact([secret], text);

          expect(redactAll(text, [secret])).toBe(expected);
          for (const sizes of chunkings) expect(streamThrough([secret], chunked(text, sizes))).toBe(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('(g) passes a dump of text without the secret through unchanged', () => {
    fc.assert(
      fc.property(secretDumpArb, noiseDumpArb, dumpArb, sizesArb, (secret, noise, how, sizes) => {
        const text = dump(utf8(noise), how);

        expect(streamThrough([secret], chunked(text, sizes))).toBe(text);
      }),
      { numRuns: 300 },
    );
  });
});
