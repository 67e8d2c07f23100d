import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createRedactor,
  DEFAULT_MASK,
  MIN_SECRET_LENGTH,
  maskPasswordVars,
  plaintextPasswords,
  redactAll,
  redactionPatterns,
} from '../../../shared/domain/redaction.ts';

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

/** Independent oracle: one regex alternation, longest form first (JS picks the first alternative that matches). */
function oneShot(secrets: readonly string[], text: string): string {
  const patterns = redactionPatterns(secrets);
  if (patterns.length === 0) return text;
  const escaped = patterns.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return text.replace(new RegExp(escaped.join('|'), 'g'), DEFAULT_MASK);
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
        expect(streamThrough(secrets, text, sizes)).toBe(oneShot(secrets, text));
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

  it('prefers the longest value that matches at a position', () => {
    expect(redactAll('xxabcdefghyy', ['abcd', 'abcdefgh'])).toBe(`xx${DEFAULT_MASK}yy`);
  });

  it('ignores values shorter than three characters', () => {
    expect(redactAll('a b ab abc', ['ab', 'a', ''])).toBe('a b ab abc');
    expect(redactAll('a b ab abc', ['abc'])).toBe(`a b ab ${DEFAULT_MASK}`);
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

  it('masks a value printed without its trailing newline, and each line of a multi-line value', () => {
    const key = '-----BEGIN KEY-----\nAAAAsecretline1\nBBBBsecretline2\n-----END KEY-----\n';

    const out = redactAll('token=hunter22;\n+ AAAAsecretline1\n  BBBBsecretline2\n', ['hunter22\n', key]);

    expect(out).toBe(`token=${DEFAULT_MASK};\n+ ${DEFAULT_MASK}\n  ${DEFAULT_MASK}\n`);
  });

  it('passes everything through when there are no secrets', () => {
    const r = createRedactor([]);

    expect(r.push('abc')).toBe('abc');
    expect(r.flush()).toBe('');
  });

  it('uses a custom mask', () => {
    expect(redactAll('pw=hunter22', ['hunter22'], '[redacted]')).toBe('pw=[redacted]');
  });
});

describe('plaintext password extra vars', () => {
  it('lists the values of password vars only', () => {
    expect(
      plaintextPasswords({
        ansible_password: 'pw1',
        ansible_become_pass: 'pw2',
        greeting: 'hi',
        ansible_user: 'x',
      }),
    ).toEqual(['pw1', 'pw2']);
  });

  it('masks password vars and keeps the others', () => {
    expect(maskPasswordVars({ ansible_winrm_password: 'pw', greeting: 'hi' })).toEqual({
      ansible_winrm_password: '********',
      greeting: 'hi',
    });
  });
});
