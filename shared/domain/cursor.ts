import { ValidationError } from './errors.ts';

/**
 * The opaque page cursors of the run list and the log pages: the position as
 * text, base64url-encoded, so a client treats it as a token and does not build
 * one. Node's base64url decoder skips junk, so a cursor is accepted only when
 * it re-encodes to itself, and only when its text is a position the store can
 * have handed out.
 *
 * @example
 * const next = encodeIdCursor(lastRun.id); // run list: `id < after` resumes
 * const after = decodeIdCursor(next);
 * const seq = decodeSeqCursor(encodeSeqCursor(41)); // log pages: 41
 * const position = decodeJsonCursor(encodeJsonCursor({ n: 41 })); // a log reader's: { n: 41 }
 */
const encode = (text: string): string => Buffer.from(text, 'utf8').toString('base64url');

/** What every cursor decoder throws for a cursor the API did not hand out. */
export const invalidCursor = (): ValidationError =>
  new ValidationError('cursor is not a cursor this API returned', [
    { path: 'cursor', message: 'invalid cursor' },
  ]);

function decode(cursor: string, accept: (text: string) => boolean): string {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!accept(text) || encode(text) !== cursor) throw invalidCursor();
  return text;
}

/**
 * The JSON object a log reader's cursor holds (not null, not an array);
 * throws {@link invalidCursor} otherwise. The reader checks its fields, and
 * that the position re-encodes to the cursor.
 */
export function decodeJsonCursor(cursor: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidCursor();
  return value as Record<string, unknown>;
}

/** A log reader's position as a cursor: its JSON, base64url-encoded ({@link decodeJsonCursor} reads it back). */
export const encodeJsonCursor = (position: object): string => encode(JSON.stringify(position));

/** A run id as a cursor (the last run of a page). */
export const encodeIdCursor = (lastId: string): string => encode(lastId);

/** The run id in a cursor: 1 to 128 printable ASCII characters. Throws ValidationError otherwise. */
export const decodeIdCursor = (cursor: string): string =>
  decode(cursor, (id) => id.length > 0 && id.length <= 128 && /^[\x21-\x7e]+$/.test(id));

/** A log sequence number as a cursor (the last line read). */
export const encodeSeqCursor = (seq: number): string => encode(String(seq));

/** The sequence number in a cursor: a non-negative integer of at most 15 digits. Throws ValidationError otherwise. */
export const decodeSeqCursor = (cursor: string): number =>
  Number(decode(cursor, (text) => /^(0|[1-9][0-9]{0,14})$/.test(text)));
