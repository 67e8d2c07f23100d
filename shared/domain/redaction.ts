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
 *     header is base64 of `user:password`), standard and URL-safe alphabet.
 * - Forms derived by escaping are at least as long and as specific as the
 *   value itself, so they follow the value's own minimum. A base64 form is a
 *   fragment: the characters that depend only on the value's bytes. Fragments
 *   shorter than 4 characters carry one or two bytes of the value and occur by
 *   chance in every certificate and token in the log, so they are not masked.
 * - The longest form that matches at a position wins; matching is leftmost.
 * - A position is only decided once enough text has arrived to rule out every
 *   longer match, so the output is the same for any chunking of the input, and
 *   at most (longest form − 1) characters are held back between calls.
 * - Matching runs on one Aho–Corasick automaton over every form of every
 *   value, built once: the cost per character does not grow with the number
 *   of secrets or forms.
 *
 * Not covered: base64 wrapped over several lines (the `base64` tool wraps at
 * 76 columns), so the part of a wrapped encoding of a value longer than about
 * 54 bytes that sits before the line break is not masked; any encoding not
 * listed above (hex, gzip, a templating engine's own escaping).
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
  const patterns = redactionPatterns(secrets);
  if (patterns.length === 0) {
    return {
      redactor: () => ({ push: (chunk) => chunk, flush: () => '' }),
      redact: (text) => text,
    };
  }
  const automaton = buildAutomaton(patterns);
  const redactor = (mask: string = DEFAULT_MASK): Redactor => scanner(automaton, mask);
  return {
    redactor,
    redact: (text, mask) => {
      const r = redactor(mask);
      return r.push(text) + r.flush();
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

/** Every form of every value that is masked, longest first, without duplicates. */
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
    for (const value of new Set([secret, trimmed])) {
      if (!longEnough(value)) continue;
      for (const b64 of base64Forms(value)) {
        if (b64.length < MIN_ENCODED_LENGTH) continue;
        forms.add(b64);
        forms.add(b64.replaceAll('+', '-').replaceAll('/', '_'));
        forms.add(b64.replaceAll('/', '\\/'));
      }
    }
  }
  return [...forms].sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
}

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
function base64Forms(value: string): string[] {
  const bytes = new TextEncoder().encode(value);
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
  return { classOf, classes, denseStates, dense, deep, fail, outLen, live };
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
