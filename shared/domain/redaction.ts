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
import { buildAutomaton, scanner } from './redaction/automaton.ts';
import { BASE64_VIEW, HEX_VIEW, viewScanner } from './redaction/encoded-view.ts';
import { encodedPatterns, redactionPatterns } from './redaction/forms.ts';
import { chain, DEFAULT_MASK, type Redactor } from './redaction/redactor.ts';

export { encodedPatterns, MIN_SECRET_LENGTH, redactionPatterns } from './redaction/forms.ts';
export { kubeconfigSecrets } from './redaction/kubeconfig.ts';
export { maskPasswordVars, PLAINTEXT_PASSWORD_VARS, plaintextPasswords } from './redaction/password-vars.ts';
export { DEFAULT_MASK, REDACTOR_FAILED, type Redactor, safeRedactor } from './redaction/redactor.ts';

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

/** A streaming redactor for one stream (see {@link compileRedaction} to make several from one set of secrets). */
export function createRedactor(secrets: readonly string[], mask: string = DEFAULT_MASK): Redactor {
  return compileRedaction(secrets).redactor(mask);
}

/** Redact a complete text at once (compiles the secrets on every call: prefer {@link compileRedaction} in a loop). */
export function redactAll(text: string, secrets: readonly string[], mask: string = DEFAULT_MASK): string {
  return compileRedaction(secrets).redact(text, mask);
}
