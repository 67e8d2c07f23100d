import { describe, expect, it } from 'vitest';
import { TargetBodySchema } from '../../../shared/domain/target.ts';

const desk = (name: string) => ({ kind: 'virtual_desktop', cloud: 'azure', name });

describe('TargetBodySchema', () => {
  it.each([
    ['a space', ' '],
    ['tabs and a newline', '\t\t\n'],
    ['a no-break space', '\u00a0'],
    ['an ideographic space', '\u3000'],
  ])('refuses a name that is only whitespace (%s)', (_what, name) => {
    const parsed = TargetBodySchema.safeParse(desk(name));

    expect(parsed.success).toBe(false);
    expect(new Set(parsed.error?.issues.map((i) => i.path.join('.')))).toEqual(new Set(['name']));
  });

  it.each([
    ['a right-to-left override', 'web\u202Egnp.exe'],
    ['a byte-order mark', '\uFEFF'],
    ['a byte-order mark inside', 'web\uFEFF-1'],
    ['a left-to-right isolate', 'web\u2066-1'],
    ['a zero-width space', 'web\u200B1'],
    ['a right-to-left mark', 'web\u200F'],
    ['a control character', 'web\u0007'],
    ['a line separator', 'web\u2028next'],
  ])('refuses a name with %s', (_what, name) => {
    const parsed = TargetBodySchema.safeParse(desk(name));

    expect(parsed.success).toBe(false);
    expect(new Set(parsed.error?.issues.map((i) => i.path.join('.')))).toEqual(new Set(['name']));
  });

  it.each([
    ['plain ASCII', 'web-1 (eu)'],
    ['accents', 'Serveur Général'],
    ['another script', 'خادم الويب'],
    ['an emoji', 'db 🐘'],
    ['Persian with a zero-width non-joiner', 'کتاب\u200Cخانه'],
    ['an emoji sequence joined by ZWJ', 'team \u{1F469}\u200D\u{1F4BB}'],
  ])('accepts a name in %s', (_what, name) => {
    expect(TargetBodySchema.safeParse(desk(name)).success).toBe(true);
  });
});
