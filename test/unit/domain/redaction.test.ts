import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compileRedaction,
  createRedactor,
  DEFAULT_MASK,
  MIN_SECRET_LENGTH,
  redactAll,
  redactionPatterns,
} from '../../../shared/domain/redaction.ts';
import { oracleRedact } from '../../support/redaction-oracle.ts';

/** Feed `text` in the given chunk sizes (cycled) and return everything the redactor emitted. */
function streamThrough(secrets: readonly string[], text: string, sizes: readonly number[]): string {
  const redactor = createRedactor(secrets);
  let out = '';
  let i = 0;
  let k = 0;
  while (i < text.length) {
    const size = Math.max(1, sizes[k % sizes.length] ?? 1);
    out += redactor.push(text.slice(i, i + size));
    i += size;
    k++;
  }
  return out + redactor.flush();
}

// Secrets never contain the mask character: a value made of `*` could be rebuilt from adjacent masks (documented).
const secretChar = fc.constantFrom(...'abcdefgxyzABC0123456789-_:/"\\é\n'.split(''));
const secretArb = fc.string({ unit: secretChar, minLength: MIN_SECRET_LENGTH, maxLength: 12 });
const textChar = fc.constantFrom(...'abcxyz019 :"\\\n-é'.split(''));
const noiseArb = fc.string({ unit: textChar, maxLength: 20 });
const sizesArb = fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 6 });

/** Text that embeds secrets (raw or JSON-escaped) between random noise. */
const scenarioArb = fc.array(secretArb, { minLength: 1, maxLength: 3 }).chain((secrets) =>
  fc.record({
    secrets: fc.constant(secrets),
    text: fc
      .array(
        fc
          .tuple(noiseArb, fc.constantFrom(...secrets), fc.boolean())
          .map(([noise, s, json]) => (json ? noise + JSON.stringify(s).slice(1, -1) : noise + s)),
        { maxLength: 5 },
      )
      .chain((parts) => noiseArb.map((tail) => parts.join('') + tail)),
    sizes: sizesArb,
  }),
);

describe('createRedactor', () => {
  it('never lets a secret through, whatever the chunking', () => {
    fc.assert(
      fc.property(scenarioArb, ({ secrets, text, sizes }) => {
        const out = streamThrough(secrets, text, sizes);
        for (const s of secrets) expect(out).not.toContain(s);
      }),
      { numRuns: 500 },
    );
  });

  it('gives the same output for any chunking as one-shot redaction', () => {
    fc.assert(
      fc.property(scenarioArb, ({ secrets, text, sizes }) => {
        expect(streamThrough(secrets, text, sizes)).toBe(oracleRedact(secrets, text));
      }),
      { numRuns: 500 },
    );
  });

  it('passes text through unchanged (no loss, no duplication) when no secret occurs', () => {
    fc.assert(
      fc.property(
        fc.array(secretArb, { maxLength: 3 }),
        fc.string({ maxLength: 200 }),
        sizesArb,
        (secrets, text, sizes) => {
          fc.pre(!redactionPatterns(secrets).some((p) => text.includes(p)));
          expect(streamThrough(secrets, text, sizes)).toBe(text);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('holds back at most the longest form minus one character', () => {
    fc.assert(
      fc.property(fc.array(secretArb, { minLength: 1, maxLength: 3 }), noiseArb, (secrets, text) => {
        const longest = Math.max(...redactionPatterns(secrets).map((p) => p.length));
        fc.pre(!redactionPatterns(secrets).some((p) => text.includes(p)));
        const emitted = createRedactor(secrets).push(text);
        expect(text.length - emitted.length).toBeLessThanOrEqual(longest - 1);
        expect(text.startsWith(emitted)).toBe(true);
      }),
    );
  });

  it('masks a value split across two chunks', () => {
    const r = createRedactor(['hunter22']);

    const out = r.push('password: hun') + r.push('ter22\nnext') + r.flush();

    expect(out).toBe(`password: ${DEFAULT_MASK}\nnext`);
  });

  it('returns a held-back prefix on flush when the value never completes', () => {
    const r = createRedactor(['abcdef']);

    expect(r.push('xx abc')).toBe('xx ');
    expect(r.flush()).toBe('abc');
  });

  it('holds back from a longer match in progress even after a shorter one completed inside it', () => {
    const r = createRedactor(['\naa\na']);

    // "aa" (a line of the value) is complete after "\naa", but the whole value started one character earlier.
    const out =
      ['\n', 'a', 'a', '\n', 'a', '\n', 'a', 'a', '\n', 'a'].map((c) => r.push(c)).join('') + r.flush();

    expect(out).toBe(DEFAULT_MASK.repeat(2));
  });

  it('prefers the longest value that matches at a position', () => {
    expect(redactAll('xxabcdefghyy', ['abcd', 'abcdefgh'])).toBe(`xx${DEFAULT_MASK}yy`);
  });

  it('prefers the leftmost match over a longer one that starts later', () => {
    expect(redactAll('abcdefgh', ['abc', 'cdefgh'])).toBe(`${DEFAULT_MASK}defgh`);
  });

  it('masks values of two characters or more, and ignores empty and one-character values', () => {
    expect(MIN_SECRET_LENGTH).toBe(2);
    expect(redactAll('a b ab abc', ['a', ''])).toBe('a b ab abc');
    expect(redactAll('a b ab abc', ['ab'])).toBe(`a b ${DEFAULT_MASK} ${DEFAULT_MASK}c`);
    // One emoji is one character (two UTF-16 code units).
    expect(redactAll('key 🔑 here', ['🔑'])).toBe('key 🔑 here');
    expect(redactAll('key 🔑🔑 here', ['🔑🔑'])).toBe(`key ${DEFAULT_MASK} here`);
  });

  it('masks the JSON-escaped form of a value', () => {
    const secret = 'pa"ss\\wörd';
    const printed = `ok: {"password": ${JSON.stringify(secret)}}`;

    const out = redactAll(printed, [secret]);

    expect(out).toBe(`ok: {"password": "${DEFAULT_MASK}"}`);
  });

  it('masks the ASCII-escaped JSON form of a non-ASCII value', () => {
    const out = redactAll('"p\\u00e4ssw\\u00f6rd"', ['pässwörd']);

    expect(out).toBe(`"${DEFAULT_MASK}"`);
  });

  it.each([
    ['a \\/ escaped slash', 'https://user:pw@host/x', '"https:\\/\\/user:pw@host\\/x"'],
    ['an astral character as a surrogate pair', 'k🔑y', '"k\\ud83d\\udd11y"'],
    ["Go's HTML-safe escapes (kubectl -o json)", 'a<b>&c', '"a\\u003cb\\u003e\\u0026c"'],
    ['a JSON text inside a JSON string', 'p"w\\x', '"{\\"pw\\": \\"p\\\\\\"w\\\\\\\\x\\"}"'],
  ])('masks the JSON form with %s', (_what, secret, printed) => {
    expect(redactAll(printed, [secret])).toMatch(/^"(\{\\"pw\\": \\")?\*{8}(\\"\})?"$/);
  });

  it('masks URL-encoded forms: encodeURIComponent, + for spaces, strict and form encoding', () => {
    const secret = "p@ss w/rd!*~'()&=?";
    const forms = [
      encodeURIComponent(secret),
      encodeURIComponent(secret).replaceAll('%20', '+'),
      new URLSearchParams({ p: secret }).toString().slice(2),
    ];

    for (const form of forms) {
      expect(redactAll(`GET /login?user=me&pw=${form}&next=1`, [secret])).toBe(
        `GET /login?user=me&pw=${DEFAULT_MASK}&next=1`,
      );
    }
  });

  it('masks base64 of the value on its own', () => {
    const encoded = Buffer.from('hunter22\n').toString('base64');

    const out = redactAll(`secret: ${encoded}`, ['hunter22']);

    expect(out).not.toContain(Buffer.from('hunter22').toString('base64').slice(0, 8));
    expect(out).toContain(DEFAULT_MASK);
  });

  it.each([['a:'], ['ab:'], ['abc:']])(
    'masks the value inside a longer base64 text (prefix %j)',
    (prefix) => {
      const header = Buffer.from(`${prefix}hunter22-tail`).toString('base64');

      const out = redactAll(`Authorization: Basic ${header}`, ['hunter22']);

      expect(out).toContain(DEFAULT_MASK);
      const leftovers = out
        .slice('Authorization: Basic '.length)
        .split(DEFAULT_MASK)
        .map((part) => Buffer.from(part, 'base64').toString('latin1'));
      for (const part of leftovers) expect(part).not.toContain('hunter');
    },
  );

  it('masks base64 at every alignment, in the standard and URL-safe alphabets', () => {
    const secret = 'k>?~ü-s3cr3t';
    for (let prefix = 0; prefix < 6; prefix++) {
      for (const encoding of ['base64', 'base64url'] as const) {
        const encoded = Buffer.from(`${'x'.repeat(prefix)}${secret}zz`).toString(encoding);

        const out = redactAll(encoded, [secret]);

        const decoded = out.split(DEFAULT_MASK).map((part) => Buffer.from(part, encoding).toString('utf8'));
        expect(out).toContain(DEFAULT_MASK);
        for (const part of decoded) expect(part).not.toContain('s3cr');
      }
    }
  });

  it('masks a value printed without its trailing newline, and each line of a multi-line value', () => {
    const key = '-----BEGIN KEY-----\nAAAAsecretline1\nBBBBsecretline2\n-----END KEY-----\n';

    const out = redactAll('token=hunter22;\n+ AAAAsecretline1\n  BBBBsecretline2\n', ['hunter22\n', key]);

    expect(out).toBe(`token=${DEFAULT_MASK};\n+ ${DEFAULT_MASK}\n  ${DEFAULT_MASK}\n`);
  });

  it('masks every line of a PEM key, headers included, with CRLF line ends too', () => {
    const body = [
      'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC',
      'BKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj',
      'MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3S',
    ];
    const key = ['-----BEGIN RSA PRIVATE KEY-----', ...body, '-----END RSA PRIVATE KEY-----', ''].join(
      '\r\n',
    );
    const printed = [
      '-----BEGIN RSA PRIVATE KEY-----',
      ...body.map((l) => `    ${l}`),
      '-----END RSA PRIVATE KEY-----',
    ];

    const out = redactAll(printed.join('\n'), [key]);

    expect(out.split('\n')).toEqual([DEFAULT_MASK, ...body.map(() => `    ${DEFAULT_MASK}`), DEFAULT_MASK]);
  });

  it('does not throw on a lone surrogate (no URL form exists for it)', () => {
    expect(redactAll('x\ud800y', ['x\ud800y'])).toBe(DEFAULT_MASK);
  });

  it('passes everything through when there are no secrets', () => {
    const r = createRedactor([]);

    expect(r.push('abc')).toBe('abc');
    expect(r.flush()).toBe('');
  });

  it('uses a custom mask', () => {
    expect(redactAll('pw=hunter22', ['hunter22'], '[redacted]')).toBe('pw=[redacted]');
  });

  it('matches the oracle with a hundred secrets and their forms (deep states, large alphabet)', () => {
    // Code points from a wide range: too many classes for every shallow state to get a dense row.
    const wide = fc.string({
      unit: fc.integer({ min: 0x4e00, max: 0x4e00 + 3000 }).map((c) => String.fromCharCode(c)),
      minLength: 2,
      maxLength: 20,
    });
    fc.assert(
      fc.property(
        fc.array(fc.oneof(secretArb, wide), { minLength: 100, maxLength: 100 }),
        fc.array(fc.nat(99), { maxLength: 20 }),
        noiseArb,
        (secrets, picks, noise) => {
          const text = picks.map((k) => `${noise}${secrets[k]}`).join(' - ');
          expect(streamThrough(secrets, text, [7, 3, 64])).toBe(oracleRedact(secrets, text));
        },
      ),
      { numRuns: 20 },
    );
  });
});

describe('compileRedaction', () => {
  it('makes independent redactors from one compilation', () => {
    const compiled = compileRedaction(['hunter22']);
    const a = compiled.redactor();
    const b = compiled.redactor('#');

    const outA = a.push('x hun');
    const outB = b.push('y hunter22 z');

    expect([outA, outB, a.push('ter22 w') + a.flush(), b.flush()]).toEqual([
      'x ',
      'y # z',
      `${DEFAULT_MASK} w`,
      '',
    ]);
    expect(compiled.redact('pw=hunter22')).toBe(`pw=${DEFAULT_MASK}`);
  });
});
