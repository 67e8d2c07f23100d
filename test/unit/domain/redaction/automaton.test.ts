import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildAutomaton, scanner } from '../../../../shared/domain/redaction/automaton.ts';

/** One scanner over `patterns`, fed `text` in chunks of `size`. */
function scan(patterns: readonly string[], text: string, size = text.length || 1): string {
  const s = scanner(buildAutomaton(patterns), '#');
  let out = '';
  for (let i = 0; i < text.length; i += size) out += s.push(text.slice(i, i + size));
  return out + s.flush();
}

describe('scanner', () => {
  it('masks the leftmost match, and the longest one at that position', () => {
    expect(scan(['abc', 'abcdef', 'cde'], 'xxabcdefyy abcx cdez')).toBe('xx#yy #x #z');
  });

  it('holds back a prefix that may still grow into a match, and returns it on flush', () => {
    const s = scanner(buildAutomaton(['secret']), '#');

    expect(s.push('a sec')).toBe('a ');
    expect(s.push('re')).toBe('');
    expect(s.flush()).toBe('secre');
  });

  it('gives the same output for any chunking', () => {
    const unit = fc.constantFrom('a', 'b', 'c', ' ');
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit, minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 4 }),
        fc.string({ unit, maxLength: 60 }),
        fc.integer({ min: 1, max: 7 }),
        (patterns, text, size) => scan(patterns, text, size) === scan(patterns, text),
      ),
    );
  });

  it('keeps states past the dense depth on the slow path (deep patterns, many classes)', () => {
    const patterns = Array.from({ length: 50 }, (_, i) => `p${String.fromCharCode(0x100 + i)}-${i}-tail`);

    expect(scan(patterns, `x ${patterns[42]} y ${patterns[7]}`, 3)).toBe('x # y #');
  });
});
