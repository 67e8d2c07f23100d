import * as z from '../lib/zod.ts';

/**
 * Characters that are not seen but change what a reader sees: controls (Cc),
 * line and paragraph separators, and format characters (Cf) such as the
 * bidirectional overrides and isolates (U+202A–202E, U+2066–2069) that make
 * `web\u202Egnp.exe` read as `webexe.png`, the byte-order mark and zero-width
 * spaces. ZWNJ and ZWJ (U+200C, U+200D) stay allowed: Persian, Indic scripts
 * and emoji sequences need them to render correctly, and they reorder nothing.
 */
const HIDDEN = /[\p{Cc}\p{Zl}\p{Zp}]|(?![\u200C\u200D])\p{Cf}/u;

/**
 * True when `s` holds a character that is not seen but changes what a reader
 * sees (see HIDDEN); for names checked outside a zod schema (asset paths).
 *
 * @example
 * hasHiddenCharacter('web\u202Egnp.yml'); // true
 */
export const hasHiddenCharacter = (s: string): boolean => HIDDEN.test(s);

/**
 * A name people read in lists and logs: at least one visible character and
 * nothing hidden that could disguise it as another name.
 *
 * @example
 * displayName(200).parse('web-1');       // 'web-1'
 * displayName(200).parse(' ');           // throws: only whitespace
 * displayName(200).parse('a\u202Eb');    // throws: a bidirectional control
 */
export const displayName = (max: number) =>
  z.string().check(
    z.minLength(1),
    z.maxLength(max),
    z.refine((s) => s.trim() !== '', 'must not be only whitespace'),
    z.refine(
      (s) => !HIDDEN.test(s),
      'must not contain control characters, bidirectional controls or invisible format characters',
    ),
    z.describe('At least one visible character; no control, bidirectional or invisible format characters'),
  );
