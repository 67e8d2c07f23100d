import { describe, expect, it } from 'vitest';
import { cidr, httpUrl, idList, list, text } from '../../../../shared/config/settings/fields.ts';
import { ruleProblems } from './area.ts';

describe('settings fields', () => {
  it('trims text and refuses an empty value', () => {
    expect(text().parse('  x ')).toBe('x');
    expect(text().safeParse('  ').success).toBe(false);
  });

  it('reads a list from a comma-separated string or an array', () => {
    const l = list(text());
    expect(l.parse('a, b,,c')).toEqual(['a', 'b', 'c']);
    expect(l.parse(['a', ' b '])).toEqual(['a', 'b']);
  });

  it('checks the shape of every id in an id list', () => {
    const ids = idList(/^subnet-[0-9a-f]+$/, 'a subnet id');
    expect(ids.safeParse('subnet-0a, subnet-1b').success).toBe(true);
    expect(ids.safeParse('subnet-0a,sg-1').error?.issues[0]?.message).toBe(
      'must be a subnet id, or several comma-separated',
    );
  });

  it('takes http(s) URLs and CIDRs only', () => {
    expect(httpUrl().safeParse('https://pws.example').success).toBe(true);
    expect(httpUrl().safeParse('ftp://pws.example').success).toBe(false);
    expect(cidr().safeParse('203.0.113.7/32').success).toBe(true);
    expect(cidr().safeParse('203.0.113.7').success).toBe(false);
  });
});

describe('ruleContext', () => {
  it('reports an unset key it needs, and an issue on a key', () => {
    const problems = ruleProblems<{ a?: string; b?: string }>(
      (s, check) => {
        check.needs(s, 'a', 'with b');
        check.issue('b', 'is wrong');
      },
      { b: 'x' },
    );

    expect(problems).toEqual(['a: must be set with b', 'b: is wrong']);
  });
});
