/**
 * Streaming secret redaction for task output.
 *
 * The task shim feeds every chunk a tool writes through a redactor before the
 * text leaves the task, so no log service ever stores a secret value — also
 * when a value is split across two chunks, or printed in an encoding rather
 * than verbatim.
 *
 * Rules:
 * - Values shorter than {@link MIN_SECRET_LENGTH} (3) are ignored. Masking a
 *   one- or two-character value would mask that text everywhere (every `a`,
 *   every `ok`), destroying the log while protecting a value that is guessable
 *   anyway; three characters is the shortest value that is still plausibly a
 *   credential (a PIN-like code) and rare enough in ordinary output.
 * - Besides the value itself, these forms are masked: the value with
 *   surrounding whitespace trimmed (secret files often end in a newline), each
 *   line of a multi-line value (diffs and indented YAML print keys line by
 *   line), the value JSON-string-escaped (how Ansible prints a result), the
 *   same with non-ASCII as `\uXXXX`, and base64 of the value at each of the
 *   three byte alignments it can have inside a longer base64 text (an HTTP
 *   basic-auth header is base64 of `user:password`).
 * - The longest form that matches at a position wins; matching is leftmost.
 * - A position is only decided once enough text has arrived to rule out every
 *   longer match, so the output is the same for any chunking of the input, and
 *   at most (longest form − 1) characters are held back between calls.
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

export const MIN_SECRET_LENGTH = 3;
export const DEFAULT_MASK = '********';

/** Encoded forms are only masked when at least this long: a 2-char base64 fragment would match everywhere. */
const MIN_ENCODED_LENGTH = 4;

export function createRedactor(secrets: readonly string[], mask: string = DEFAULT_MASK): Redactor {
  const patterns = redactionPatterns(secrets);
  if (patterns.length === 0) {
    return { push: (chunk) => chunk, flush: () => '' };
  }
  const firstChars = new Set(patterns.map((p) => p.charAt(0)));
  let held = '';

  /**
   * Scan `text`; at each position either mask the longest pattern that matches,
   * or emit the character when no pattern can start there. When `final` is
   * false and a pattern could still match once more text arrives, stop and hold
   * the rest back.
   */
  const scan = (text: string, final: boolean): { out: string; rest: string } => {
    let out = '';
    let plainFrom = 0;
    let i = 0;
    while (i < text.length) {
      if (!firstChars.has(text.charAt(i))) {
        i++;
        continue;
      }
      const remaining = text.length - i;
      let matched: string | undefined;
      let undecided = false;
      // Patterns are sorted longest first: the first full match is the longest.
      for (const p of patterns) {
        if (p.length <= remaining) {
          if (text.startsWith(p, i)) {
            matched = p;
            break;
          }
        } else if (!final && p.startsWith(text.slice(i))) {
          undecided = true;
          break;
        }
      }
      if (undecided) {
        return { out: out + text.slice(plainFrom, i), rest: text.slice(i) };
      }
      if (matched !== undefined) {
        out += text.slice(plainFrom, i) + mask;
        i += matched.length;
        plainFrom = i;
      } else {
        i++;
      }
    }
    return { out: out + text.slice(plainFrom), rest: '' };
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

/** Redact a complete text at once (messages the shim writes itself). */
export function redactAll(text: string, secrets: readonly string[], mask: string = DEFAULT_MASK): string {
  const r = createRedactor(secrets, mask);
  return r.push(text) + r.flush();
}

/** Every form of every value that is masked, longest first, without duplicates. */
export function redactionPatterns(secrets: readonly string[]): readonly string[] {
  const forms = new Set<string>();
  const addPlain = (value: string): void => {
    if (value.length < MIN_SECRET_LENGTH) return;
    forms.add(value);
    const json = JSON.stringify(value).slice(1, -1);
    if (json !== value) forms.add(json);
    const ascii = asciiEscape(json);
    if (ascii !== json) forms.add(ascii);
  };
  for (const secret of secrets) {
    if (secret.length < MIN_SECRET_LENGTH) continue;
    addPlain(secret);
    addPlain(secret.trim());
    if (/[\r\n]/.test(secret)) {
      for (const line of secret.split(/\r?\n/)) addPlain(line.trim());
    }
    for (const b64 of base64Forms(secret)) {
      if (b64.length >= MIN_ENCODED_LENGTH) forms.add(b64);
    }
  }
  return [...forms].sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
}

function asciiEscape(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
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
