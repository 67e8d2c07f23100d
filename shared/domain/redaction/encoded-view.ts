import { type Automaton, stepOf } from './automaton.ts';
import { holdingBack, type Redactor, ScanOutput } from './redactor.ts';

/** How an encoded pass reads the text: what it skips between two symbols. */
export interface View {
  /** Up to two blanks (space, tab) around a line end or on their own: hex dumps separate bytes. */
  readonly blanks: boolean;
  /** `\/` is read as `/` (JSON may escape it). */
  readonly slashEscape: boolean;
}

export const BASE64_VIEW: View = { blanks: false, slashEscape: true };
export const HEX_VIEW: View = { blanks: true, slashEscape: false };

const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const SLASH = 0x2f;
const BACKSLASH = 0x5c;
const LOWER_N = 0x6e;
const LOWER_R = 0x72;
const MAX_BLANKS = 2;
/** {@link gapEnd}: the text ends before the gap is decided. */
const MORE = -2;
/** {@link gapEnd}: what starts here is no gap; it ends the match in progress. */
const BREAK = -1;

const isBlank = (c: number): boolean => c === SPACE || c === TAB;

/**
 * Where the gap starting at `j` ends: blanks (if the view allows them), at
 * most one line end (LF, CRLF, JSON's `\n` or `\r\n`), blanks, and then a
 * symbol, which must follow so that gaps cannot be chained into an unbounded
 * run. Returns {@link MORE} or {@link BREAK} instead of a position.
 */
function gapEnd(text: string, j: number, view: View, classOf: Int32Array): number {
  const n = text.length;
  const blanks = (from: number): number => {
    let k = from;
    while (k < n && k - from < MAX_BLANKS && view.blanks && isBlank(text.charCodeAt(k))) k++;
    return k;
  };
  let k = blanks(j);
  if (k >= n) return MORE;
  const c = text.charCodeAt(k);
  let lineEnd = 0;
  if (c === LF) {
    lineEnd = 1;
  } else if (c === CR) {
    if (k + 1 >= n) return MORE;
    if (text.charCodeAt(k + 1) === LF) lineEnd = 2;
  } else if (c === BACKSLASH) {
    if (k + 1 >= n) return MORE;
    const d = text.charCodeAt(k + 1);
    if (d === LOWER_N) {
      lineEnd = 2;
    } else if (d === LOWER_R) {
      if (k + 3 >= n) return MORE;
      if (text.charCodeAt(k + 2) === BACKSLASH && text.charCodeAt(k + 3) === LOWER_N) lineEnd = 4;
    }
  }
  if (lineEnd > 0) k = blanks(k + lineEnd);
  if (k === j) return BREAK;
  if (k >= n) return MORE;
  const next = text.charCodeAt(k);
  if (classOf[next] !== 0) return k;
  if (next === BACKSLASH && view.slashEscape && classOf[SLASH] !== 0) {
    if (k + 1 >= n) return MORE;
    return text.charCodeAt(k + 1) === SLASH ? k : BREAK;
  }
  return BREAK;
}

/** A masked span keeps its line ends (and the blanks around them): each line's part becomes one mask. */
const LINE_END_IN_SPAN = /([ \t]*(?:\r\n|\n|\\r\\n|\\n)[ \t]*)/;

function maskSpan(span: string, mask: string): string {
  return span
    .split(LINE_END_IN_SPAN)
    .map((part, i) => (i % 2 === 0 ? mask : part))
    .join('');
}

/**
 * The scanner of `scanner` (automaton.ts), reading symbols of a {@link View} instead
 * of characters: a gap is skipped without a state change while a pattern is
 * in progress, and `\/` is one symbol. Where each of the last symbols starts
 * is kept in a ring, so that a match, and the held-back tail, map back to the
 * text. The hot loop is the one of `scanner` (automaton.ts), left also for a
 * character that may start a gap or an escape.
 */
export function viewScanner(a: Automaton, view: View, mask: string): Redactor {
  const { classOf, outLen, live, classes, denseStates, dense } = a;
  let size = 1;
  while (size < a.longest + 2) size *= 2;
  const wrap = size - 1;
  const starts = new Int32Array(size);
  const slashClass = classOf[SLASH]!;
  const slashEscape = view.slashEscape && slashClass !== 0;
  // 1: may start a gap (only matters while a pattern is in progress); 2: may start `\/` (matters everywhere).
  const special = new Uint8Array(128);
  special[LF] = 1;
  special[CR] = 1;
  special[BACKSLASH] = slashEscape ? 2 : 1;
  if (view.blanks) {
    special[SPACE] = 1;
    special[TAB] = 1;
  }

  const step = stepOf(a);

  const scan = (text: string, final: boolean): { out: string; rest: string } => {
    // Its candidate counts symbols: symbol k starts at text[starts[k & wrap]].
    const o = new ScanOutput(text);
    let s = 0;
    let j = 0;
    /** Symbols read so far. */
    let k = 0;
    const n = text.length;
    for (;;) {
      let read = false;
      if (o.start < 0 && s < denseStates && j < n) {
        // Hot loop: no match pending, shallow states, one character per symbol.
        let row = s * classes;
        let hit = -1;
        while (j < n) {
          const c = text.charCodeAt(j);
          const cls = classOf[c]!;
          if (cls === 0 && c < 128) {
            const sp = special[c]!;
            if (sp === 2 || (sp === 1 && row !== 0)) break;
          }
          const v = dense[row + cls]!;
          starts[k & wrap] = j;
          j++;
          k++;
          if (v < 0) {
            hit = ~v;
            break;
          }
          row = v;
        }
        if (hit >= 0) {
          s = hit;
          read = true;
        } else {
          s = row / classes;
          if (j >= n) continue;
        }
      }
      if (read) {
        // The hot loop read a symbol into a state it does not handle.
      } else if (j < n) {
        const c = text.charCodeAt(j);
        let cls = classOf[c]!;
        let width = 1;
        if (cls === 0 && c === BACKSLASH && slashEscape) {
          if (j + 1 >= n && !final) break;
          if (text.charCodeAt(j + 1) === SLASH) {
            cls = slashClass;
            width = 2;
          }
        }
        if (cls === 0 && s !== 0 && live[s]! > 0 && c < 128 && special[c] !== 0) {
          const g = gapEnd(text, j, view, classOf);
          if (g === MORE && !final) break;
          if (g >= 0) {
            j = g;
            continue;
          }
        }
        starts[k & wrap] = j;
        j += width;
        k++;
        s = cls === 0 ? 0 : step(s, cls);
      } else if (o.start < 0 || !final) {
        break;
      }
      o.offer(outLen[s]!, k);
      if (!o.decided(k, live[s]!, j < n || !final)) continue;
      const from = starts[o.start & wrap]!;
      const last = starts[(o.end - 1) & wrap]!;
      // A match ends on a pattern symbol: `\/` if it starts with a backslash, else one character.
      const to = last + (text.charCodeAt(last) === BACKSLASH ? 2 : 1);
      o.commit(from, to, maskSpan(text.slice(from, to), mask));
      j = to;
      s = 0;
    }
    // Hold from the first symbol of the pattern in progress, or from where reading stopped for want of text.
    return o.result(final, live[s]! > 0 ? starts[(k - live[s]!) & wrap]! : j);
  };

  return holdingBack(scan);
}
