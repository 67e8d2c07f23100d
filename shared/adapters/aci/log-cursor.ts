import { createHash } from 'node:crypto';
import { decodeJsonCursor, encodeJsonCursor, invalidCursor } from '../../domain/cursor.ts';
import type { LogLine, LogLineInput, LogPage, LogStream } from '../../ports/log-store.ts';

/**
 * Paging over ACI's container log, which is not a stream but a snapshot:
 * `containers.listLogs` answers the whole current text every time. Pure.
 *
 * The cursor is line-based over that snapshot: `p`, the number of snapshot
 * lines already handed out, plus `a`, short hashes of the last one, two and
 * three lines handed out (the anchor) and `g`, the number of lines the reader
 * has seen in all (the `seq` of the last one). While a container runs its log only grows
 * at the end, so `p` is enough and the anchor merely confirms it. Once the
 * container has stopped ACI keeps only about the last 16 KB / 1,000 lines;
 * when that drops the head, `p` no longer points at the same line and the
 * anchor is searched for instead. If the reader's last lines are gone
 * altogether, every line still held is newer than them: they are all handed
 * out behind one `system` line saying output was lost. Limitation: a run
 * whose output outgrows ACI's retention loses the middle for anyone who did
 * not read it while it ran; and a search may settle on the wrong one of
 * several identical three-line blocks (it picks the last), or, at the very
 * head of a truncated snapshot where fewer lines can be compared, of several
 * identical lines.
 *
 * The same cursor pages over the archive (`LogStore`) that `cleanup` fills
 * before it deletes the group, so a follower crosses from live to archived
 * output without a repeated or a lost line.
 *
 * @example
 * const lines = parseAciLog(content, { includeOpenLine: false, now });
 * const page = pageFrom(lines, cursor); // page.lines, page.nextCursor
 */
export interface SourceLine {
  readonly stream: LogStream;
  readonly text: string;
  readonly at: string;
}

interface Position {
  /** Lines handed to this reader so far: the seq of the last one. */
  readonly g: number;
  /** Source lines handed out: where the next page starts when nothing moved. */
  readonly p: number;
  /**
   * Anchor: hashes of the last one, two and three non-system lines handed
   * out (as many as there were), dot-separated; absent before the first.
   */
  readonly a?: string;
}

/** Most lines one page carries; the next call continues after them. */
export const PAGE_MAX_LINES = 1000;
const ANCHOR_LINES = 3;
const HASH_CHARS = 11;

export const GAP_NOTICE =
  '[remote-worker] Some output of this run is missing here: ACI keeps only about the last 1,000 lines of a finished container.';

/** `2024-05-01T10:00:00.123456789Z text`: the prefix `timestamps=true` adds to every line. */
const STAMPED = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})(?: (.*))?$/s;

function splitStamp(line: string, now: string): { at: string; text: string } {
  const m = STAMPED.exec(line);
  if (m === null) return { at: now, text: line };
  // Date parses milliseconds at most: cut nanoseconds to three digits.
  const fraction = (m[2] ?? '.000').slice(0, 4).padEnd(4, '0');
  const at = new Date(`${m[1]}${fraction}${m[3]}`);
  return Number.isNaN(at.getTime()) ? { at: now, text: line } : { at: at.toISOString(), text: m[4] ?? '' };
}

/**
 * The lines of one `listLogs` answer (asked with `timestamps: true`). The last
 * line without a newline may still be growing: it is left out unless
 * `includeOpenLine` (the container has ended, or is about to be deleted).
 */
export function parseAciLog(
  content: string | undefined,
  options: { readonly includeOpenLine: boolean; readonly now: string },
): SourceLine[] {
  if (content === undefined || content === '') return [];
  const raw = content.split('\n');
  if (content.endsWith('\n') || !options.includeOpenLine) raw.pop();
  return raw.map((line) => {
    const { at, text } = splitStamp(line.endsWith('\r') ? line.slice(0, -1) : line, options.now);
    return { stream: 'stdout', text, at };
  });
}

/**
 * Hashes of the last one, two and three non-system lines at or before
 * `index` (fewer when fewer exist): the anchor of a reader who stopped there.
 */
function anchorsAt(source: readonly SourceLine[], index: number): string[] {
  const window: string[] = [];
  const hashes: string[] = [];
  for (let i = index; i >= 0 && window.length < ANCHOR_LINES; i--) {
    const line = source[i];
    if (line === undefined || line.stream === 'system') continue;
    window.unshift(`${line.stream}\t${line.text}`);
    hashes.push(createHash('sha256').update(window.join('\n')).digest('base64url').slice(0, HASH_CHARS));
  }
  return hashes;
}

/**
 * Whether a reader anchored at `anchors` stopped right after `source[j]`.
 * Compares as many trailing lines as both sides have, so a line that ACI's
 * truncation left near the start of its snapshot is still recognised.
 */
function stoppedAt(source: readonly SourceLine[], j: number, anchors: readonly string[]): boolean {
  if (source[j] === undefined || source[j].stream === 'system') return false;
  const here = anchorsAt(source, j);
  const k = Math.min(here.length, anchors.length);
  return k > 0 && here[k - 1] === anchors[k - 1];
}

/**
 * Where to continue in `source` for a reader at `position`: right after the
 * line its anchor names. `gap` when that line is no longer in `source`, in
 * which case everything in it is newer than what the reader saw.
 */
function locate(source: readonly SourceLine[], position: Position): { start: number; gap: boolean } {
  if (position.a === undefined) return { start: 0, gap: false };
  const anchors = position.a.split('.');
  if (position.p >= 1 && stoppedAt(source, position.p - 1, anchors)) return { start: position.p, gap: false };
  for (let j = source.length - 1; j >= 0; j--) {
    if (stoppedAt(source, j, anchors)) return { start: j + 1, gap: false };
  }
  return { start: 0, gap: true };
}

const anchorOf = (source: readonly SourceLine[], index: number): string | undefined => {
  const hashes = anchorsAt(source, index);
  return hashes.length === 0 ? undefined : hashes.join('.');
};

const encodeCursor = (position: Position): string => encodeJsonCursor(position);

const COUNT = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** Only a cursor this module made passes: the right fields and types, and it re-encodes to itself. */
function decodeCursor(cursor: string): Position {
  const { g, p, a } = decodeJsonCursor(cursor);
  if (
    !COUNT(g) ||
    !COUNT(p) ||
    (a !== undefined && (typeof a !== 'string' || !/^[\w-]{11}(\.[\w-]{11}){0,2}$/.test(a)))
  ) {
    throw invalidCursor();
  }
  const position: Position = a === undefined ? { g, p } : { g, p, a };
  if (encodeCursor(position) !== cursor) throw invalidCursor();
  return position;
}

/**
 * The page after `cursor` in `source` (a live snapshot or the archive), at
 * most `limit` lines. `nextCursor` is the given cursor, unchanged, when
 * nothing new arrived.
 */
export function pageFrom(
  source: readonly SourceLine[],
  cursor: string | undefined,
  limit: number = PAGE_MAX_LINES,
): LogPage {
  const position: Position = cursor === undefined ? { g: 0, p: 0 } : decodeCursor(cursor);
  const unchanged = cursor ?? encodeCursor(position);
  const { start, gap } = locate(source, position);
  // The gap notice counts toward the page, so a page never holds more than `limit` lines (but at least one source line).
  const slice = source.slice(start, start + Math.max(1, limit - (gap ? 1 : 0)));
  if (slice.length === 0) return { lines: [], nextCursor: unchanged };

  let seq = position.g;
  const lines: LogLine[] = [];
  if (gap) lines.push({ seq: ++seq, at: slice[0]!.at, stream: 'system', text: GAP_NOTICE });
  for (const line of slice) lines.push({ seq: ++seq, at: line.at, stream: line.stream, text: line.text });
  const end = start + slice.length;
  const a = anchorOf(source, end - 1);
  return { lines, nextCursor: encodeCursor(a === undefined ? { g: seq, p: end } : { g: seq, p: end, a }) };
}

/**
 * The snapshot lines the archive does not hold yet: those after the archive's
 * last line, or all of them behind a gap notice when that line has already
 * fallen out of the snapshot. Nothing when the archive is up to date.
 */
export function linesToArchive(
  archived: readonly SourceLine[],
  snapshot: readonly SourceLine[],
): LogLineInput[] {
  if (snapshot.length === 0) return [];
  const a = anchorOf(archived, archived.length - 1);
  const held = archived.filter((l) => l.stream !== 'system').length;
  const { start, gap } = locate(snapshot, a === undefined ? { g: 0, p: 0 } : { g: held, p: held, a });
  const fresh = snapshot.slice(start).map((l) => ({ stream: l.stream, text: l.text, at: l.at }));
  if (!gap || fresh.length === 0) return fresh;
  return [{ stream: 'system', text: GAP_NOTICE, at: fresh[0]!.at }, ...fresh];
}
