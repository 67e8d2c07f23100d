import { encodeJsonCursor } from '../../domain/cursor.ts';
import { ValidationError } from '../../domain/errors.ts';
import { shimLineStream } from '../../domain/shim-protocol.ts';
import * as z from '../../lib/zod.ts';
import type { LogStream } from '../../ports/log-store.ts';

/**
 * Reading a pod's log in pieces without duplicates or gaps. Pure.
 *
 * The launcher always asks for `timestamps=true`: the kubelet then opens every
 * line with its RFC 3339 timestamp (nanoseconds, trailing zeros dropped). A
 * position in the log is "n lines read, the last at time t, k of them at
 * exactly t". The next read asks for `sinceTime` = t cut to the second (the
 * API's precision) and skips what the position already covers: lines before
 * t, and the first k lines at t. So a read costs the tail of the log, not all
 * of it, and keeps working when the kubelet rotates the container's log file
 * (it serves only the newest file, so counting lines from the start would
 * skip lines after a rotation).
 *
 * This relies on timestamps never going backwards within the log, which holds
 * for one stream; the task shim writes everything to stdout. A line still
 * being written (no newline yet) is not read until it is complete, or until
 * the container has ended.
 *
 * @example
 * const { lines } = parsePodLog(text, { final: false });
 * const fresh = lines.filter(newLineFilter(position));
 * const next = advance(position, fresh);
 */
export interface PodLogLine {
  /** The kubelet's timestamp, as it printed it. */
  readonly ts: string;
  readonly text: string;
}

export interface LogPosition {
  /** Lines read so far. */
  readonly n: number;
  /** Timestamp of the last line read; absent before the first. */
  readonly t?: string;
  /** How many of the lines read carry exactly `t`. */
  readonly k: number;
}

export const START: LogPosition = { n: 0, k: 0 };

/** Lines the task shim writes itself are shipped as `system`, like the relay does. */
export const streamOf = (text: string): LogStream => shimLineStream(text);

const TIMESTAMP = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/;

/** Nanoseconds since the epoch of an RFC 3339 timestamp; undefined when it is not one. */
export function parseTimestamp(ts: string | undefined): bigint | undefined {
  const match = TIMESTAMP.exec(ts ?? '');
  if (match === null) return undefined;
  const [, base = '', fraction = '', zone = ''] = match;
  const ms = Date.parse(`${base}${zone}`);
  if (Number.isNaN(ms)) return undefined;
  return BigInt(ms) * 1_000_000n + BigInt(fraction.padEnd(9, '0'));
}

/**
 * The same instant in UTC with every digit kept (`…T10:00:00.123456789Z`), as
 * a line's `at`: the API's timestamps are ISO in UTC, and position
 * comparisons need the nanoseconds. Undefined when `ts` is not a timestamp.
 */
export function utcTimestamp(ts: string): string | undefined {
  const nanos = parseTimestamp(ts);
  if (nanos === undefined) return undefined;
  const base = new Date(Number(nanos / 1_000_000n)).toISOString().slice(0, 19);
  const fraction = (nanos % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${base}${fraction === '' ? '' : `.${fraction}`}Z`;
}

/** `sinceTime` for the next read: the position's time cut to the whole second, in UTC. */
export function sinceTimeOf(position: LogPosition): string | undefined {
  const nanos = parseTimestamp(position.t);
  if (nanos === undefined) return undefined;
  const seconds = nanos / 1_000_000_000n;
  return new Date(Number(seconds) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Split a `timestamps=true` log into lines. The text after the last newline
 * is a line still being written: kept only when `final` (the container has
 * ended, or the read was cut by nothing). A line without a readable
 * timestamp takes the one before it.
 */
export function parsePodLog(text: string, options: { final: boolean }): PodLogLine[] {
  const parts = text.split('\n');
  const last = parts.pop() ?? '';
  if (options.final && last !== '') parts.push(last);
  const lines: PodLogLine[] = [];
  let previous = '';
  for (const raw of parts) {
    const part = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const space = part.indexOf(' ');
    const head = space < 0 ? part : part.slice(0, space);
    if (parseTimestamp(head) !== undefined) {
      previous = head;
      lines.push({ ts: head, text: space < 0 ? '' : part.slice(space + 1) });
    } else {
      lines.push({ ts: previous, text: part });
    }
  }
  return lines;
}

/**
 * A filter, to apply to lines in log order, that passes the lines after
 * `position`. Once one line passes, every later one does.
 */
export function newLineFilter(position: LogPosition): (line: { readonly ts: string }) => boolean {
  const t = parseTimestamp(position.t);
  if (t === undefined) return () => true;
  let skipped = 0;
  let open = false;
  return ({ ts }) => {
    if (open) return true;
    const at = parseTimestamp(ts);
    if (at !== undefined && at < t) return false;
    if (at === t && skipped < position.k) {
      skipped += 1;
      return false;
    }
    open = true;
    return true;
  };
}

/** The position after reading `lines` (in order) from `position`. */
export function advance(position: LogPosition, lines: readonly { readonly ts: string }[]): LogPosition {
  let { n, t, k } = position;
  let tNanos = parseTimestamp(t);
  for (const line of lines) {
    n += 1;
    const at = parseTimestamp(line.ts);
    if (at !== undefined && at === tNanos) {
      k += 1;
    } else {
      t = line.ts;
      tNanos = at;
      k = 1;
    }
  }
  return t === undefined ? { n, k } : { n, t, k };
}

/**
 * The cursor `logs` hands out. Opaque to clients (base64url of JSON):
 * - `{ a, n, t?, k }`: a position in the log of the pod of attempt `a`,
 *   read live from the API;
 * - `{ z }`: a cursor of the archive LogStore, once the pod is gone.
 */
export type KubernetesLogCursor =
  | { readonly kind: 'pod'; readonly attempt: number; readonly position: LogPosition }
  | { readonly kind: 'archive'; readonly cursor: string };

const count = () => z.int().check(z.minimum(0));
const CursorSchema = z.union([
  z.strictObject({
    a: z.int().check(z.minimum(0), z.maximum(999_999_999)),
    n: count(),
    t: z.optional(z.string().check(z.refine((t) => parseTimestamp(t) !== undefined))),
    k: count(),
  }),
  z.strictObject({ z: z.string().check(z.minLength(1), z.maxLength(4096)) }),
]);

export function encodeLogCursor(cursor: KubernetesLogCursor): string {
  const json =
    cursor.kind === 'archive'
      ? { z: cursor.cursor }
      : { a: cursor.attempt, n: cursor.position.n, t: cursor.position.t, k: cursor.position.k };
  return encodeJsonCursor(json);
}

export function decodeLogCursor(cursor: string): KubernetesLogCursor {
  let parsed: z.infer<typeof CursorSchema> | undefined;
  try {
    const text = Buffer.from(cursor, 'base64url').toString('utf8');
    const result = CursorSchema.safeParse(JSON.parse(text));
    // Node's base64url decoder skips junk: a cursor is ours only if it re-encodes to itself.
    if (result.success && Buffer.from(text, 'utf8').toString('base64url') === cursor) parsed = result.data;
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined) {
    throw new ValidationError('cursor is not a cursor this API returned', [
      { path: 'cursor', message: 'invalid cursor' },
    ]);
  }
  if ('z' in parsed) return { kind: 'archive', cursor: parsed.z };
  const position: LogPosition =
    parsed.t === undefined ? { n: parsed.n, k: parsed.k } : { n: parsed.n, t: parsed.t, k: parsed.k };
  return { kind: 'pod', attempt: parsed.a, position };
}
