/**
 * Streaming secret redaction for task output.
 *
 * The task shim feeds every chunk a tool writes through a redactor before the
 * text leaves the task, so no log service ever stores a secret value — also
 * when a value is split across two chunks, or printed in an encoding rather
 * than verbatim.
 *
 * Rules:
 * - A value of {@link MIN_SECRET_LENGTH} (2) characters or more is masked,
 *   however short: there is no "too short to matter" exemption for a real
 *   credential, even though a two-character value (`ok`) is then masked
 *   everywhere it occurs. Empty and one-character values are ignored: masking
 *   every `a` would destroy the log and hide nothing a reader could not guess.
 *   Characters are counted as code points, so one emoji is one character.
 * - The value is matched as printed raw and in the forms tools print it:
 *   - trimmed of surrounding whitespace (secret files often end in a newline);
 *   - each line of a multi-line value, trimmed. PEM `-----BEGIN …-----` and
 *     `-----END …-----` lines are masked like every other line: the redactor
 *     cannot tell which lines of an arbitrary multi-line secret are
 *     boilerplate (a kubeconfig's `apiVersion: v1` sits next to its `token:`
 *     line), a list of exempt lines would fail open for the next format, and
 *     masking a header costs only that the same line is masked elsewhere in
 *     the same run's output;
 *   - JSON-string-escaped (how Ansible prints a result), also with non-ASCII
 *     as `\uXXXX` (Python's `ensure_ascii`), with `/` as `\/`, with `<>&` as
 *     `\u003c…` (Go's encoder, i.e. kubectl), and escaped twice (a JSON text
 *     inside a JSON string: a registered `stdout`);
 *   - shell-quoted: inside single quotes with `'\''` (POSIX shells, bash
 *     `${v@Q}`) or `'"'"'` (Python's `shlex.quote`), inside double quotes
 *     (`\` `"` `$` and backtick escaped), backslash-escaped like bash
 *     `printf %q`, and Python-repr-escaped; and these again JSON-escaped;
 *   - URL-encoded as `encodeURIComponent`, as RFC 3986 strict (also
 *     `!'()*`: Python's `quote_plus`) and as WHATWG form encoding (`!'()~`
 *     but not `*`: `URLSearchParams`), and the first two again with `/`
 *     left as is (Python's `quote`, Jinja's and Ansible's `urlencode`), each
 *     with `%20` and with `+` for spaces;
 *   - base64 of the value and of its trimmed form at each of the three byte
 *     alignments it can have inside a longer base64 text (an HTTP basic-auth
 *     header is base64 of `user:password`), standard and URL-safe alphabet,
 *     also wrapped over lines at any width (`base64` and MIME wrap at 76
 *     columns, `openssl base64` and PEM at 64) with LF or CRLF line ends, and
 *     JSON-escaped (`\/`, and `\n` or `\r\n` as the line end: a registered
 *     `stdout` as Ansible prints it);
 *   - hex of the value's bytes and of its trimmed form, all lower case or all
 *     upper case (`xxd -p`, `od -An -tx1`, `hexdump -e '/1 "%02x"'`,
 *     Python's `.hex()`), plain or with bytes separated by up to two spaces or
 *     tabs and wrapped over lines at any width. A value in mixed-case hex is
 *     not masked: no dump tool prints one, and allowing it would double the
 *     chance of masking an unrelated digest.
 * - Forms derived by escaping are at least as long and as specific as the
 *   value itself, so they follow the value's own minimum. A base64 form is a
 *   fragment: the characters that depend only on the value's bytes. Fragments
 *   shorter than 4 characters carry one or two bytes of the value and occur by
 *   chance in every certificate and token in the log, so they are not masked;
 *   for the same reason hex is only masked for values of 3 bytes or more
 *   (6 digits: the 24 bits of a 4-character base64 fragment), since 4 hex
 *   digits occur in nearly every digest, commit id and UUID a log prints.
 * - The longest form that matches at a position wins; matching is leftmost.
 * - A position is only decided once enough text has arrived to rule out every
 *   longer match, so the output is the same for any chunking of the input, and
 *   at most a bounded tail (the longest form, its line breaks and escapes
 *   included) is held back between calls.
 * - Matching runs on Aho–Corasick automata built once: the cost per character
 *   does not grow with the number of secrets or forms.
 *
 * Wrapped encodings: the encoded forms are not enumerated per wrap width and
 * column (3 alignments × 140 column offsets × 2 line ends would multiply the
 * automaton by 840, and for a long value every one of those forms is long).
 * Instead the encoded forms live in their own automata, each run over a view
 * of the text in which a line break between two symbols is not there: for
 * base64 one line end (LF, CRLF, or JSON's `\n` / `\r\n`), for hex also up to
 * two blanks on each side of it or between two bytes (`od` starts each line
 * with one, `hexdump -C` puts two in the middle of a line). The automata grow
 * only with the values, the view catches any wrap width, and a longer run of
 * separators (a blank line, an indented block) still ends a match. A masked
 * span that crosses line ends keeps them: each line's part becomes one mask,
 * so the output has the same lines as the input.
 *
 * The three passes run one after the other on the stream: base64, hex, then
 * the textual forms. The encoded passes go first because a short textual value
 * (`ok`) occurs by chance inside base64 text, and masking it first would cut
 * the base64 form of a longer value in two, leaving both halves readable.
 *
 * Not covered: base64 or hex with other separators (indentation, Ansible's
 * `stdout_lines` list, `hexdump -C` and plain `xxd` with their offset columns,
 * `od -x` and `hexdump` without a format, which swap the bytes of each word),
 * and any encoding not listed above (gzip, a templating engine's own escaping).
 * A custom mask made of base64, hex or value characters can itself be matched
 * by a later pass next to other text; the default mask cannot.
 *
 * A value made only of mask characters could in theory be rebuilt from two
 * adjacent masks; such a value says nothing beyond the mask itself.
 *
 * @example
 * const r = createRedactor(['hunter22']);
 * r.push('password: hun') + r.push('ter22\n') + r.flush(); // 'password: ********\n'
 */
export interface Redactor {
  /** Redact a chunk; returns what can safely be written now (possibly empty). */
  push(chunk: string): string;
  /** End of stream: returns the held-back tail, redacted. The redactor can be reused afterwards. */
  flush(): string;
}

export const MIN_SECRET_LENGTH = 2;
export const DEFAULT_MASK = '********';
/** What a caller writes instead of output it could not redact. */
export const REDACTOR_FAILED = 'output withheld: the redactor failed';

/** Base64 fragments are only masked when at least this long: a 2-char fragment would match everywhere. */
const MIN_ENCODED_LENGTH = 4;
/** Hex forms are only masked for values of at least this many bytes (24 bits, as a 4-character base64 fragment). */
const MIN_HEX_BYTES = 3;

/** Secrets compiled into one matcher, from which any number of redactors are made. */
export interface CompiledRedaction {
  /** A streaming redactor for one stream. */
  redactor(mask?: string): Redactor;
  /** Redact a complete text at once. */
  redact(text: string, mask?: string): string;
}

/**
 * Compile the secrets once and make a redactor per stream from the result:
 * building is the expensive part (tens to hundreds of milliseconds for a
 * hundred secrets and all their forms); scanning is linear in the text.
 *
 * @example
 * const compiled = compileRedaction(['hunter22']);
 * const stdout = compiled.redactor();
 * const stderr = compiled.redactor();
 * compiled.redact('pw=hunter22'); // 'pw=********'
 */
export function compileRedaction(secrets: readonly string[]): CompiledRedaction {
  const { base64, hex } = encodedPatterns(secrets);
  const passes = [
    { patterns: base64, view: BASE64_VIEW },
    { patterns: hex, view: HEX_VIEW },
    { patterns: redactionPatterns(secrets), view: undefined },
  ]
    .filter(({ patterns }) => patterns.length > 0)
    .map(({ patterns, view }) => ({ automaton: buildAutomaton(patterns), view }));
  const redactor = (mask: string = DEFAULT_MASK): Redactor =>
    passes
      .map(({ automaton, view }) =>
        view === undefined ? scanner(automaton, mask) : viewScanner(automaton, view, mask),
      )
      .reduce<Redactor>(chain, { push: (chunk) => chunk, flush: () => '' });
  return {
    redactor,
    redact: (text, mask) => {
      const r = redactor(mask);
      return r.push(text) + r.flush();
    },
  };
}

/**
 * `second` applied to what `first` returns. Each is chunk-safe on its own, so
 * the pair is: `first` returns the same text for any chunking, `second` then
 * sees the same text, only cut differently.
 */
function chain(first: Redactor, second: Redactor): Redactor {
  return {
    push: (chunk) => second.push(first.push(chunk)),
    flush: () => {
      const rest = first.flush();
      return second.push(rest) + second.flush();
    },
  };
}

/** A streaming redactor for one stream (see {@link compileRedaction} to make several from one set of secrets). */
export function createRedactor(secrets: readonly string[], mask: string = DEFAULT_MASK): Redactor {
  return compileRedaction(secrets).redactor(mask);
}

/** Redact a complete text at once (compiles the secrets on every call: prefer {@link compileRedaction} in a loop). */
export function redactAll(text: string, secrets: readonly string[], mask: string = DEFAULT_MASK): string {
  return compileRedaction(secrets).redact(text, mask);
}

/**
 * A redactor that withholds instead of failing open: when the wrapped
 * redactor throws, that call returns `notice` and every later call returns
 * nothing, because the redactor's state (and so what it already held back) is
 * no longer trustworthy. The error itself is dropped: its message could quote
 * the text being redacted. `failed` tells a caller that works in lines when to
 * end its partial line and write its own notice instead (pass `notice: ''`).
 *
 * @example
 * const r = safeRedactor(createRedactor(secrets));
 * process.stdout.write(r.push(chunk)); // 'output withheld: the redactor failed\n' once, if it ever throws
 */
export function safeRedactor(
  redactor: Redactor,
  notice: string = `${REDACTOR_FAILED}\n`,
): Redactor & { readonly failed: boolean } {
  let failed = false;
  const guard = (call: () => string): string => {
    if (failed) return '';
    try {
      return call();
    } catch {
      failed = true;
      return notice;
    }
  };
  return {
    push: (chunk) => guard(() => redactor.push(chunk)),
    flush: () => guard(() => redactor.flush()),
    get failed() {
      return failed;
    },
  };
}

// ---------------------------------------------------------------- forms

/**
 * Every textual form of every value that is masked, longest first, without
 * duplicates (the encoded forms are in {@link encodedPatterns}).
 */
export function redactionPatterns(secrets: readonly string[]): readonly string[] {
  const forms = new Set<string>();
  const addValue = (value: string): void => {
    if (!longEnough(value)) return;
    for (const quoted of quotedForms(value)) {
      forms.add(quoted);
      for (const escaped of jsonForms(quoted)) forms.add(escaped);
    }
    // A JSON text inside a JSON string (a registered stdout holding JSON).
    for (const inner of jsonForms(value).slice(0, 2)) {
      for (const escaped of jsonForms(inner)) forms.add(escaped);
    }
    for (const encoded of urlForms(value)) forms.add(encoded);
  };
  for (const secret of secrets) {
    if (!longEnough(secret)) continue;
    addValue(secret);
    const trimmed = secret.trim();
    addValue(trimmed);
    if (/[\r\n]/.test(secret)) {
      for (const line of secret.split(/\r\n|\r|\n/)) addValue(line.trim());
    }
  }
  return longestFirst(forms);
}

/**
 * The encoded forms of every value, longest first, each as it reads in its
 * view of the text (line breaks removed, `\/` read as `/`): base64 fragments
 * in both alphabets, and hex in lower and upper case.
 */
export function encodedPatterns(secrets: readonly string[]): {
  base64: readonly string[];
  hex: readonly string[];
} {
  const base64 = new Set<string>();
  const hex = new Set<string>();
  for (const secret of secrets) {
    if (!longEnough(secret)) continue;
    for (const value of new Set([secret, secret.trim()])) {
      if (!longEnough(value)) continue;
      const bytes = new TextEncoder().encode(value);
      for (const b64 of base64Forms(bytes)) {
        if (b64.length < MIN_ENCODED_LENGTH) continue;
        base64.add(b64);
        base64.add(b64.replaceAll('+', '-').replaceAll('/', '_'));
      }
      if (bytes.length >= MIN_HEX_BYTES) {
        const digits = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
        hex.add(digits);
        hex.add(digits.toUpperCase());
      }
    }
  }
  return { base64: longestFirst(base64), hex: longestFirst(hex) };
}

const longestFirst = (forms: Set<string>): string[] =>
  [...forms].sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));

function longEnough(value: string): boolean {
  if (value.length >= 2 * MIN_SECRET_LENGTH) return true;
  let count = 0;
  for (const _ of value) {
    if (++count >= MIN_SECRET_LENGTH) return true;
  }
  return false;
}

/** The value as shells and Python quote it (the text between the quotes; the quotes themselves are no secret). */
function quotedForms(value: string): string[] {
  return [
    value,
    value.replaceAll("'", `'\\''`),
    value.replaceAll("'", `'"'"'`),
    value.replace(/[\\"$`]/g, '\\$&'),
    // bash `printf %q` for a value without control characters.
    value.replace(/[ \t'"$`\\!,*?[\]{}|&;<>()^]/g, '\\$&'),
    pythonRepr(value),
  ];
}

function pythonRepr(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: repr escapes exactly the C0 controls and DEL.
  return value.replace(/[\\'\x00-\x1f\x7f]/g, (c) => {
    switch (c) {
      case '\\':
        return '\\\\';
      case "'":
        return "\\'";
      case '\n':
        return '\\n';
      case '\r':
        return '\\r';
      case '\t':
        return '\\t';
      default:
        return `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
    }
  });
}

const jsonEscape = (text: string): string => JSON.stringify(text).slice(1, -1);

/** JSON-string escapes of `text` as different encoders write them (including `text` itself when nothing needs escaping). */
function jsonForms(text: string): string[] {
  const json = jsonEscape(text);
  const ascii = json.replace(/[^\x20-\x7e]/g, unicodeEscape);
  const go = json.replace(/[<>&\u2028\u2029]/g, unicodeEscape);
  return [json, ascii, go, json.replaceAll('/', '\\/'), ascii.replaceAll('/', '\\/')];
}

const unicodeEscape = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

function urlForms(value: string): string[] {
  let component: string;
  try {
    component = encodeURIComponent(value);
  } catch {
    // A lone surrogate cannot be URL-encoded: no tool can print that form either.
    return [];
  }
  const percent = (c: string): string => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;
  const strict = component.replace(/[!'()*]/g, percent);
  const form = component.replace(/[!'()~]/g, percent);
  // Python's `quote` (and Jinja's `urlencode`, Ansible's filter) keep `/` as is by default.
  const path = strict.replaceAll('%2F', '/');
  return [...new Set([component, strict, form, path, component.replaceAll('%2F', '/')])].flatMap(
    (encoded) => [encoded, encoded.replaceAll('%20', '+')],
  );
}

/**
 * The base64 characters that depend only on the value's bytes, for the value
 * starting at byte offset 0, 1 and 2 of a 3-byte group. Offset 0 is the value
 * encoded on its own (without `=` padding, so it also matches when more
 * text follows it in the encoded input).
 */
function base64Forms(bytes: Uint8Array): string[] {
  const forms: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const padded = new Uint8Array(offset + bytes.length + 2);
    padded.set(bytes, offset);
    const encoded = toBase64(padded);
    const firstBit = offset * 8;
    const endBit = firstBit + bytes.length * 8;
    // Character k covers bits [6k, 6k + 6): keep those wholly inside the value.
    const from = Math.ceil(firstBit / 6);
    const to = Math.floor(endBit / 6);
    if (to > from) forms.push(encoded.slice(from, to));
  }
  return forms;
}

function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

// ---------------------------------------------------------------- matching

/**
 * Aho–Corasick automaton over UTF-16 code units. Characters are mapped to
 * classes (0: in no pattern, which always leads back to the root). States are
 * numbered breadth-first, so the shallow states, where scanning spends nearly
 * all its time, come first and get dense transition rows; deeper states keep
 * their own edges in a map and fall back along failure links.
 *
 * A dense cell holds the target's row offset (`id × classes`) when the target
 * is a dense state that ends no pattern — the only case the hot loop handles
 * itself — and `~id` otherwise.
 */
interface Automaton {
  readonly classOf: Int32Array;
  readonly classes: number;
  readonly denseStates: number;
  readonly dense: Int32Array;
  readonly deep: Map<number, number>;
  readonly fail: Int32Array;
  /** Length of the longest pattern that ends in this state (0: none). */
  readonly outLen: Int32Array;
  /** Depth of the longest suffix state that can still grow into a longer pattern. */
  readonly live: Int32Array;
  /** Length of the longest pattern. */
  readonly longest: number;
}

/** Dense rows go to states up to this depth, within {@link DENSE_BUDGET} cells. */
const DENSE_DEPTH = 3;
const DENSE_BUDGET = 1 << 20;

function buildAutomaton(patterns: readonly string[]): Automaton {
  const classOf = new Int32Array(65536);
  let classes = 1;
  let total = 1;
  for (const p of patterns) {
    total += p.length;
    for (let i = 0; i < p.length; i++) {
      const c = p.charCodeAt(i);
      if (classOf[c] === 0) classOf[c] = classes++;
    }
  }

  // The trie, in insertion order.
  const depthOf = new Int32Array(total);
  const parentOf = new Int32Array(total);
  const viaClass = new Int32Array(total);
  const terminal = new Int32Array(total);
  const firstChild = new Int32Array(total).fill(-1);
  const nextSibling = new Int32Array(total).fill(-1);
  const edges = new Map<number, number>();
  let count = 1;
  for (const p of patterns) {
    let s = 0;
    for (let i = 0; i < p.length; i++) {
      const cls = classOf[p.charCodeAt(i)]!;
      const key = s * classes + cls;
      let t = edges.get(key);
      if (t === undefined) {
        t = count++;
        edges.set(key, t);
        depthOf[t] = depthOf[s]! + 1;
        parentOf[t] = s;
        viaClass[t] = cls;
        nextSibling[t] = firstChild[s]!;
        firstChild[s] = t;
      }
      s = t;
    }
    terminal[s] = p.length;
  }

  // Breadth-first numbering.
  const order = new Int32Array(count);
  const idOf = new Int32Array(count);
  let tail = 1;
  for (let head = 0; head < tail; head++) {
    for (let c = firstChild[order[head]!]!; c !== -1; c = nextSibling[c]!) {
      idOf[c] = tail;
      order[tail++] = c;
    }
  }

  let denseStates = 1;
  while (
    denseStates < count &&
    depthOf[order[denseStates]!]! <= DENSE_DEPTH &&
    (denseStates + 1) * classes <= DENSE_BUDGET
  ) {
    denseStates++;
  }
  // First pass: dense cells hold plain state ids.
  const dense = new Int32Array(denseStates * classes);
  const deep = new Map<number, number>();
  const fail = new Int32Array(count);
  const outLen = new Int32Array(count);
  const live = new Int32Array(count);
  const stepById = (from: number, cls: number): number => {
    let s = from;
    for (;;) {
      if (s < denseStates) return dense[s * classes + cls]!;
      const t = deep.get(s * classes + cls);
      if (t !== undefined) return t;
      s = fail[s]!;
    }
  };
  for (let id = 0; id < count; id++) {
    const node = order[id]!;
    const parent = idOf[parentOf[node]!]!;
    fail[id] = id === 0 || parent === 0 ? 0 : stepById(fail[parent]!, viaClass[node]!);
    const f = fail[id]!;
    outLen[id] = terminal[node]! > 0 ? terminal[node]! : outLen[f]!;
    live[id] = firstChild[node] !== -1 ? depthOf[node]! : live[f]!;
    if (id < denseStates) {
      const row = id * classes;
      if (id !== 0) dense.copyWithin(row, f * classes, f * classes + classes);
      for (let c = firstChild[node]!; c !== -1; c = nextSibling[c]!) dense[row + viaClass[c]!] = idOf[c]!;
    } else {
      for (let c = firstChild[node]!; c !== -1; c = nextSibling[c]!) {
        deep.set(id * classes + viaClass[c]!, idOf[c]!);
      }
    }
  }
  // Second pass: encode the dense cells for the hot loop.
  for (let i = 0; i < dense.length; i++) {
    const t = dense[i]!;
    dense[i] = t < denseStates && outLen[t] === 0 ? t * classes : ~t;
  }
  const longest = patterns.reduce((max, p) => Math.max(max, p.length), 0);
  return { classOf, classes, denseStates, dense, deep, fail, outLen, live, longest };
}

function scanner(a: Automaton, mask: string): Redactor {
  const { classOf, classes, denseStates, dense, deep, fail, outLen, live } = a;
  let held = '';

  /** The state after `from` reads a character of class `cls` (the slow path: state ids, failure links). */
  const step = (from: number, cls: number): number => {
    let s = from;
    for (;;) {
      if (s < denseStates) {
        const v = dense[s * classes + cls]!;
        return v >= 0 ? v / classes : ~v;
      }
      const t = deep.get(s * classes + cls);
      if (t !== undefined) return t;
      s = fail[s]!;
    }
  };

  /**
   * Scan `text` from a decided position. The candidate is the leftmost match
   * found so far (longest for its start); it is committed once no pattern
   * still in progress could start at or before it, and scanning restarts
   * after it. When `final` is false, text from the first undecided position
   * on is held back.
   */
  const scan = (text: string, final: boolean): { out: string; rest: string } => {
    let out = '';
    let plainFrom = 0;
    let s = 0;
    let j = 0;
    let candStart = -1;
    let candEnd = -1;
    const n = text.length;
    for (;;) {
      if (candStart < 0 && s < denseStates) {
        // Hot loop: no match pending, shallow states, no pattern ends here.
        let row = s * classes;
        let v = 0;
        while (j < n) {
          v = dense[row + classOf[text.charCodeAt(j)]!]!;
          j++;
          if (v < 0) break;
          row = v;
        }
        if (v >= 0) {
          s = row / classes;
          break;
        }
        s = ~v;
      } else if (j < n) {
        s = step(s, classOf[text.charCodeAt(j)]!);
        j++;
      } else if (candStart < 0 || !final) {
        break;
      }
      // (At the end of a final scan with a match pending, this falls through to commit it.)
      const m = outLen[s]!;
      if (m !== 0) {
        const start = j - m;
        if (candStart < 0 || start < candStart) {
          candStart = start;
          candEnd = j;
        } else if (start === candStart) {
          candEnd = j;
        }
      }
      if (candStart < 0 || (j - live[s]! <= candStart && (j < n || !final))) continue;
      // Commit the candidate: nothing still in progress can start at or before it.
      out += text.slice(plainFrom, candStart) + mask;
      plainFrom = candEnd;
      j = candEnd;
      s = 0;
      candStart = -1;
    }
    if (final) return { out: out + text.slice(plainFrom), rest: '' };
    // A pending match was not committed, so a pattern in progress starts at or before it: hold from there.
    const holdFrom = Math.max(plainFrom, n - live[s]!);
    return { out: out + text.slice(plainFrom, holdFrom), rest: text.slice(holdFrom) };
  };

  return {
    push(chunk) {
      if (chunk.length === 0) return '';
      const { out, rest } = scan(held + chunk, false);
      held = rest;
      return out;
    },
    flush() {
      const { out } = scan(held, true);
      held = '';
      return out;
    },
  };
}

// ---------------------------------------------------------------- encoded views

/** How an encoded pass reads the text: what it skips between two symbols. */
interface View {
  /** Up to two blanks (space, tab) around a line end or on their own: hex dumps separate bytes. */
  readonly blanks: boolean;
  /** `\/` is read as `/` (JSON may escape it). */
  readonly slashEscape: boolean;
}

const BASE64_VIEW: View = { blanks: false, slashEscape: true };
const HEX_VIEW: View = { blanks: true, slashEscape: false };

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
 * The scanner of {@link scanner}, reading symbols of a {@link View} instead
 * of characters: a gap is skipped without a state change while a pattern is
 * in progress, and `\/` is one symbol. Where each of the last symbols starts
 * is kept in a ring, so that a match, and the held-back tail, map back to the
 * text. The hot loop is the one of {@link scanner}, left also for a
 * character that may start a gap or an escape.
 */
function viewScanner(a: Automaton, view: View, mask: string): Redactor {
  const { classOf, fail, outLen, live, classes, denseStates, dense, deep } = a;
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
  let held = '';

  const step = (from: number, cls: number): number => {
    let s = from;
    for (;;) {
      if (s < denseStates) {
        const v = dense[s * classes + cls]!;
        return v >= 0 ? v / classes : ~v;
      }
      const t = deep.get(s * classes + cls);
      if (t !== undefined) return t;
      s = fail[s]!;
    }
  };

  const scan = (text: string, final: boolean): { out: string; rest: string } => {
    let out = '';
    let plainFrom = 0;
    let s = 0;
    let j = 0;
    /** Symbols read so far; symbol k starts at text[starts[k & wrap]]. */
    let k = 0;
    let candStart = -1;
    let candEnd = -1;
    const n = text.length;
    for (;;) {
      let read = false;
      if (candStart < 0 && s < denseStates && j < n) {
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
      } else if (candStart < 0 || !final) {
        break;
      }
      const m = outLen[s]!;
      if (m !== 0) {
        const start = k - m;
        if (candStart < 0 || start < candStart) {
          candStart = start;
          candEnd = k;
        } else if (start === candStart) {
          candEnd = k;
        }
      }
      if (candStart < 0 || (k - live[s]! <= candStart && (j < n || !final))) continue;
      const from = starts[candStart & wrap]!;
      const last = starts[(candEnd - 1) & wrap]!;
      // A match ends on a pattern symbol: `\/` if it starts with a backslash, else one character.
      const to = last + (text.charCodeAt(last) === BACKSLASH ? 2 : 1);
      out += text.slice(plainFrom, from) + maskSpan(text.slice(from, to), mask);
      plainFrom = to;
      j = to;
      s = 0;
      candStart = -1;
    }
    if (final) return { out: out + text.slice(plainFrom), rest: '' };
    // Hold from the first symbol of the pattern in progress, or from where reading stopped for want of text.
    const holdFrom = Math.max(plainFrom, live[s]! > 0 ? starts[(k - live[s]!) & wrap]! : j);
    return { out: out + text.slice(plainFrom, holdFrom), rest: text.slice(holdFrom) };
  };

  return {
    push(chunk) {
      if (chunk.length === 0) return '';
      const { out, rest } = scan(held + chunk, false);
      held = rest;
      return out;
    },
    flush() {
      const { out } = scan(held, true);
      held = '';
      return out;
    },
  };
}

// ---------------------------------------------------------------- kubeconfig

/**
 * Credential values inside a kubeconfig (YAML or JSON): bearer tokens,
 * auth-provider tokens, basic-auth passwords, client keys and certificates,
 * with `client-key-data` also decoded (the PEM key it holds). Redacting the
 * kubeconfig text covers it printed whole or line by line; these cover a
 * credential printed on its own (`Authorization: Bearer …`).
 *
 * @example
 * kubeconfigSecrets('users: [{name: u, user: {token: tok-12345}}]'); // ['tok-12345']
 */
export function kubeconfigSecrets(kubeconfig: string): string[] {
  const found = new Set<string>();
  const field =
    /["']?\b(token|id-token|refresh-token|access-token|password|client-key-data|client-certificate-data)["']?[ \t]*:[ \t]*("(?:[^"\\\n]|\\.)*"|'(?:[^'\n]|'')*'|[^\s,{}[\]#"']+)/g;
  for (const [, name, raw] of kubeconfig.matchAll(field)) {
    if (raw === undefined) continue;
    const value = unquote(raw);
    if (value === '') continue;
    found.add(value);
    if (name === 'client-key-data') {
      const decoded = decodeBase64(value);
      if (decoded !== undefined) found.add(decoded);
    }
  }
  return [...found];
}

function unquote(raw: string): string {
  if (raw.startsWith('"')) {
    try {
      return JSON.parse(raw) as string;
    } catch {
      return raw.slice(1, -1);
    }
  }
  if (raw.startsWith("'")) return raw.slice(1, -1).replaceAll("''", "'");
  return raw;
}

function decodeBase64(text: string): string | undefined {
  try {
    const binary = atob(text);
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------- extra vars

/**
 * Extra vars that carry a plaintext password. The seeds let the local runner
 * forward a WinRM `ansible_password` as an extra var; its value must still
 * never be shown: it is masked in every run view and redacted from output.
 */
export const PLAINTEXT_PASSWORD_VARS = [
  'ansible_password',
  'ansible_winrm_password',
  'ansible_winrm_pass',
  'ansible_become_password',
  'ansible_become_pass',
  'ansible_ssh_pass',
] as const;

/** The string values of plaintext password extra vars, for the redactor. */
export function plaintextPasswords(extraVars: Readonly<Record<string, unknown>>): string[] {
  return PLAINTEXT_PASSWORD_VARS.flatMap((name) => {
    const value = extraVars[name];
    return typeof value === 'string' && value !== '' ? [value] : [];
  });
}

/** Extra vars as they may be shown: plaintext password values replaced by the mask. */
export function maskPasswordVars(extraVars: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(extraVars).map(([name, value]) => [
      name,
      (PLAINTEXT_PASSWORD_VARS as readonly string[]).includes(name) ? DEFAULT_MASK : value,
    ]),
  );
}
