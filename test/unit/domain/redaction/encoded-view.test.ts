import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { compileRedaction, redactAll } from '../../../../shared/domain/redaction.ts';
import { readableBytes } from '../../../support/redaction-oracle.ts';

describe('wrapped base64 and hex, produced by the real tools', () => {
  // Coreutils' `base64` and `od` are in every Debian image .ci/run starts from (`xxd` is not, so it is not used).
  const secret = 'K3Y-ÄÖÜ-🔑-0123456789-QWERTZUIOP-ASDFGHJKL-YXCVBNM';
  const secretBytes = new Set(Buffer.from(secret));
  // One input with the secret at 60 offsets: every byte alignment and every column of a 64- or 76-column line.
  // The text around it is lower-case ASCII, which shares no byte with the secret.
  const input = Array.from({ length: 60 }, (_, i) => `${'x'.repeat(i)}${secret}${'y'.repeat(50)}\n`).join('');
  const tool = (file: string, args: string[]): string =>
    execFileSync(file, args, { input, encoding: 'utf8' });

  it.each([
    ['base64 (76 columns)', () => tool('base64', []), 'base64'],
    ['base64 -w 64', () => tool('base64', ['-w', '64']), 'base64'],
    ['base64 -w 76, CRLF', () => tool('base64', ['-w', '76']).replaceAll('\n', '\r\n'), 'base64'],
    ['od -An -tx1 -v', () => tool('od', ['-An', '-tx1', '-v']), 'hex'],
    [
      'od -An -tx1 -v, upper case, CRLF',
      () => tool('od', ['-An', '-tx1', '-v']).toUpperCase().replaceAll('\n', '\r\n'),
      'hex',
    ],
    [
      'od as xxd -p (plain hex, 60 digits a line)',
      () =>
        (
          tool('od', ['-An', '-tx1', '-v'])
            .replace(/\s/g, '')
            .match(/.{1,60}/g) ?? []
        ).join('\n'),
      'hex',
    ],
  ] as const)('masks every occurrence in %s, line by line', (_name, produce, encoding) => {
    const dumped = produce();
    const compiled = compileRedaction([secret]);
    const chunks = dumped.match(/[\s\S]{1,7}/g) ?? [];
    const r = compiled.redactor();

    const out = chunks.map((c) => r.push(c)).join('') + r.flush();

    const { bytes, between } = readableBytes(out, encoding);
    expect([...bytes].filter((b) => secretBytes.has(b))).toEqual([]);
    expect(between).toEqual([]);
    expect(out.split('\n')).toHaveLength(dumped.split('\n').length);
    // The text around the secret stays readable: only the secret's own characters are masked.
    expect(bytes.toString('latin1')).toContain('x'.repeat(30));
    expect(out).toBe(compiled.redact(dumped));
  });

  it('masks a wrapped base64 value as Ansible prints a registered stdout (JSON, \\n and \\/)', () => {
    const dumped = execFileSync('base64', ['-w', '64'], { input: `ab${secret}\n`, encoding: 'utf8' });
    const json = JSON.stringify({ stdout: dumped.trimEnd() }).replaceAll('/', '\\/');

    const out = redactAll(json, [secret]);

    const decoded = JSON.parse(out) as { stdout: string };
    const { bytes } = readableBytes(decoded.stdout, 'base64');
    expect([...bytes].filter((b) => secretBytes.has(b))).toEqual([]);
    expect(decoded.stdout.split('\n')).toHaveLength(dumped.trimEnd().split('\n').length);
  });

  it("leaves mixed-case hex and a two-byte value's hex alone (documented)", () => {
    const mixed = Buffer.from('secret-key')
      .toString('hex')
      .replace(/[a-f]/, (c) => c.toUpperCase());

    expect(redactAll(`x ${mixed}`, ['secret-key'])).toBe(`x ${mixed}`);
    expect(redactAll('digest 6f6b9a', ['ok'])).toBe('digest 6f6b9a');
  });
});
