import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assetPathProblem } from '../../../shared/domain/asset-path.ts';

describe('assetPathProblem', () => {
  it.each([
    'site.yml',
    'hello/site.yaml',
    'tools/setup.sh',
    'win/Install.PS1',
    'pkgs/agent-1.2.rpm',
    'pkgs/agent_1.2.deb',
    'say hello.sh',
    // ZWNJ and ZWJ are part of how Persian and Indic names are written; they reorder nothing.
    'فارسی\u200Cها/site.yml',
    'übung/ñandú.yml',
  ])('accepts %s', (path) => {
    expect(assetPathProblem(path)).toBeUndefined();
  });

  it.each([
    ['../etc/passwd.yml', 'outside_root'],
    ['a/../../b.yml', 'outside_root'],
    ['/etc/site.yml', 'outside_root'],
    ['C:/x/site.yml', 'outside_root'],
    ['c:site.yml', 'outside_root'],
    ['a\\..\\b.yml', 'invalid'],
    ['.git/config.yml', 'invalid'],
    ['a/.env.sh', 'invalid'],
    ['a//b.yml', 'invalid'],
    ['a/./b.yml', 'invalid'],
    ['a/', 'invalid'],
    ['', 'invalid'],
    ['tool.exe', 'invalid'],
    ['site.yml.bak', 'invalid'],
    ['a\u0000b.yml', 'invalid'],
    ['line\nbreak.yml', 'invalid'],
    [' leading.yml', 'invalid'],
    ['evil\u202Elmy.sh', 'invalid'],
    ['a\u202Ab.yml', 'invalid'],
    ['a\u2066b.yml', 'invalid'],
    ['\uFEFFsite.yml', 'invalid'],
    ['si\u200Bte.yml', 'invalid'],
    ['a\u2028b.yml', 'invalid'],
    ['a\u0085b.yml', 'invalid'],
    ['a\u00ADb.yml', 'invalid'],
    [`${'a'.repeat(256)}.yml`, 'invalid'],
  ])('refuses %j (%s)', (path, code) => {
    expect(assetPathProblem(path)?.code).toBe(code);
  });

  it('never accepts a path with a .. segment or a leading / (property)', () => {
    const segment = fc.constantFrom('a', 'b c', '..', '.', '.hidden', 'x.yml', '');
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 5 }), fc.boolean(), (segments, absolute) => {
        const path = `${absolute ? '/' : ''}${segments.join('/')}`;
        if (segments.includes('..') || absolute) expect(assetPathProblem(path)).toBeDefined();
      }),
    );
  });
});
