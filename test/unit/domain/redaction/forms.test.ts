import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { encodedPatterns, redactionPatterns } from '../../../../shared/domain/redaction/forms.ts';
import { DEFAULT_MASK, redactAll } from '../../../../shared/domain/redaction.ts';

describe('redactionPatterns', () => {
  it('lists the textual forms longest first, without duplicates, and nothing for a one-character value', () => {
    expect(redactionPatterns(['a b'])).toEqual(['a%20b', 'a\\\\ b', 'a\\ b', 'a b', 'a+b']);
    expect(redactionPatterns(['x', ''])).toEqual([]);
  });
});

describe('encodedPatterns', () => {
  it('keeps base64 fragments of 4 characters or more and hex for values of 3 bytes or more', () => {
    expect(encodedPatterns(['abc'])).toEqual({ base64: ['YWJj'], hex: ['616263'] });
    expect(encodedPatterns(['ab'])).toEqual({ base64: [], hex: [] });
  });

  it('adds the URL-safe alphabet and upper-case hex', () => {
    const { base64, hex } = encodedPatterns(['\xfb\xff\xbf']);
    expect(base64).toEqual(expect.arrayContaining(['w7vDv8K/', 'w7vDv8K_']));
    expect(hex).toEqual(['C3BBC3BFC2BF', 'c3bbc3bfc2bf']);
  });
});

describe('shell and Python quoting, checked against the real tools', () => {
  const values = [
    'it\'s a "quoted" $HOME `x` back\\slash!',
    'pässwörd/ü+&=? ;|(paren)*[x]{y}^',
    '🔑key~tilde,comma#hash',
  ];

  /** Each value through bash and python3; returns, per value, what each tool printed. */
  function printedBy(): string[][] {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: `${v@Q}` is bash, not a template placeholder.
    const script = 'for v in "$@"; do printf "%q\\0" "$v"; printf "%s\\0" "${v@Q}"; done';
    const bash = execFileSync('bash', ['-c', script, 'bash', ...values], { encoding: 'utf8' }).split('\0');
    const python = JSON.parse(
      execFileSync(
        'python3',
        [
          '-c',
          [
            'import json, shlex, sys, urllib.parse as u',
            'out = [[shlex.quote(v), repr(v), json.dumps(v), json.dumps(v, ensure_ascii=False),',
            '        u.quote_plus(v), u.quote(v, safe=""), u.quote(v)] for v in sys.argv[1:]]',
            'print(json.dumps(out))',
          ].join('\n'),
          ...values,
        ],
        { encoding: 'utf8' },
      ),
    ) as string[][];
    return values.map((_, i) => [bash[2 * i] ?? '', bash[2 * i + 1] ?? '', ...(python[i] ?? [])]);
  }

  it('masks the text between the quotes of every form', () => {
    const printed = printedBy();
    values.forEach((value, i) => {
      const forms = printed[i] ?? [];
      // u.quote(v) keeps `/` (safe="/" by default), as Jinja's and Ansible's urlencode do.
      expect(forms).toHaveLength(9);
      for (const form of forms) {
        const quote = /^['"]/.test(form) && form.endsWith(form.charAt(0)) ? form.charAt(0) : '';

        const out = redactAll(`cmd --password ${form} --next`, [value]);

        expect({ form, out }).toEqual({ form, out: `cmd --password ${quote}${DEFAULT_MASK}${quote} --next` });
      }
    });
  });
});
