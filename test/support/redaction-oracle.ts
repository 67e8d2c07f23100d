import { DEFAULT_MASK, encodedPatterns, redactionPatterns } from '../../shared/domain/redaction.ts';

/**
 * A one-shot oracle for the redactor, written as regular expressions rather
 * than automata: the three passes in the redactor's order (base64, hex,
 * textual), each one alternation of its patterns, longest first (JS takes the
 * first alternative that matches, so at the leftmost position the longest
 * pattern wins). The encoded patterns allow a gap between any two symbols, as
 * documented in redaction.ts; a match keeps its line ends and masks each
 * line's part.
 */
export function oracleRedact(secrets: readonly string[], text: string, mask: string = DEFAULT_MASK): string {
  const { base64, hex } = encodedPatterns(secrets);
  const lineEnd = String.raw`(?:\r\n|\n|\\r\\n|\\n)`;
  const base64Gap = `${lineEnd}?`;
  const hexGap = String.raw`(?:[ \t]{1,2}|[ \t]{0,2}${lineEnd}[ \t]{0,2})?`;
  const symbol = (c: string): string => (c === '/' ? String.raw`(?:/|\\/)` : escapeRegex(c));
  const keepLineEnds = new RegExp(String.raw`([ \t]*${lineEnd}[ \t]*)`);
  const perLine = (match: string): string =>
    match
      .split(keepLineEnds)
      .map((part, i) => (i % 2 === 0 ? mask : part))
      .join('');
  const passes: (readonly [readonly string[], (p: string) => string, (match: string) => string])[] = [
    [base64, (p) => [...p].map(symbol).join(base64Gap), perLine],
    [hex, (p) => [...p].join(hexGap), perLine],
    [redactionPatterns(secrets), escapeRegex, () => mask],
  ];
  let out = text;
  for (const [all, source, replace] of passes) {
    // Only the patterns that can occur: a match with its gaps removed is the pattern, so it is in the text
    // with every gap character removed. (A regex of every pattern with its gaps takes minutes per text.)
    const stripped =
      replace === perLine ? out.replaceAll('\\/', '/').replace(/\\r\\n|\\n|[ \t\r\n]/g, '') : out;
    const patterns = all.filter((p) => stripped.includes(p));
    if (patterns.length === 0) continue;
    out = out.replace(new RegExp(patterns.map(source).join('|'), 'g'), replace);
  }
  return out;
}

const escapeRegex = (p: string): string => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The bytes a reader can decode from redacted dump output, where the byte
 * grid is known: each line of `base64` output starts and ends on a 4-character
 * group (64 and 76 are multiples of 4; the last line is padded), and each line
 * of hex output on a byte. So a line's text before its first mask decodes
 * from the line start, and its text after its last mask decodes backwards
 * from the line end, both on the true grid: every byte returned is a byte of
 * the input whose bits are all visible. Text between two masks on one line has
 * no known grid and is returned undecoded in `between`.
 */
export function readableBytes(
  output: string,
  encoding: 'base64' | 'hex',
  mask: string = DEFAULT_MASK,
): { bytes: Buffer; between: string[] } {
  const group = encoding === 'base64' ? 4 : 2;
  // Node decodes a partial group to the bytes its characters cover completely, and stops hex at an odd digit.
  const decode = (text: string): Buffer => Buffer.from(text.replace(/[ \t]/g, ''), encoding);
  const fromEnd = (text: string): Buffer => {
    const symbols = text.replace(/[ \t]/g, '');
    return Buffer.from(symbols.slice(symbols.length % group), encoding);
  };
  const bytes: Buffer[] = [];
  const between: string[] = [];
  for (const line of output.split(/\r?\n/)) {
    const parts = line.split(mask);
    if (parts.length === 1) {
      bytes.push(decode(line));
      continue;
    }
    bytes.push(decode(parts[0] ?? ''), fromEnd(parts[parts.length - 1] ?? ''));
    between.push(...parts.slice(1, -1).filter((p) => p !== ''));
  }
  return { bytes: Buffer.concat(bytes), between };
}
