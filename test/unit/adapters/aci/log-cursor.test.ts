import { describe, expect, it } from 'vitest';
import { GAP_NOTICE, pageFrom, type SourceLine } from '../../../../shared/adapters/aci/log-cursor.ts';

const AT = '2030-01-01T00:00:00.000Z';
const lines = (...texts: string[]): SourceLine[] => texts.map((text) => ({ stream: 'stdout', text, at: AT }));

describe('pageFrom', () => {
  it('never answers more than the limit, the gap notice included', () => {
    const first = pageFrom(lines('a', 'b'), undefined, 2);
    // ACI kept only the newest lines: what the reader saw is gone, so the page starts with the notice.
    const rotated = lines('x', 'y', 'z');

    const page = pageFrom(rotated, first.nextCursor, 2);
    const next = pageFrom(rotated, page.nextCursor, 2);

    expect(page.lines.map((l) => l.text)).toEqual([GAP_NOTICE, 'x']);
    expect(next.lines.map((l) => l.text)).toEqual(['y', 'z']);
  });
});
