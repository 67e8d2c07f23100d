/**
 * The forms a secret value is masked in: as printed, quoted, JSON-escaped and
 * URL-encoded (the textual forms), and base64 and hex (the encoded forms,
 * matched in their own views of the text). The rules are in redaction.ts.
 */
export const MIN_SECRET_LENGTH = 2;
/** Base64 fragments are only masked when at least this long: a 2-char fragment would match everywhere. */
const MIN_ENCODED_LENGTH = 4;
/** Hex forms are only masked for values of at least this many bytes (24 bits, as a 4-character base64 fragment). */
const MIN_HEX_BYTES = 3;

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
