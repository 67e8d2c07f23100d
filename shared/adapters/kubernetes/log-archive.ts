import type { LogLine, LogLineInput, LogStore } from '../../ports/log-store.ts';
import { advance, type LogPosition, newLineFilter, START } from './pod-log.ts';

/**
 * A pod's log, kept in the archive LogStore once the pod is gone.
 *
 * The archive of a run holds, per pod, a marker line and then that pod's
 * lines in order, each with the kubelet's timestamp as `at` (in UTC with its
 * nanoseconds; both LogStores keep `at` as given, which positions rely on). The marker (`system`, `k8s: log of pod <ns>/<pod>
 * (attempt <n>) follows`) tells where a pod's lines start, so:
 * - archiving again (cleanup after cancel, a follower, a retried cleanup)
 *   appends only what the archive lacks: the pod's archived lines are a
 *   position in its log (see pod-log.ts);
 * - a live cursor (a position in the pod's log) maps to the archive line
 *   after it, so a client that followed the pod goes on reading the archive
 *   with nothing repeated or skipped;
 * - a pod that existed leaves a trace after it is deleted, which keeps a late
 *   duplicate launch from creating it again.
 * A pod's own output cannot forge a marker: it is archived as `stdout`, or
 * as `system` only when it starts with the shim's `remote-worker: ` prefix.
 *
 * @example
 * const { found, position } = await scanArchive(archive, run.id, markerText(ns, pod, 1));
 */
const SCAN_PAGE = 500;
const APPEND_BATCH = 500;
const MARKER = /^k8s: log of pod [a-z0-9-]+\/[a-z0-9-]+ \(attempt \d+\) follows$/;

export const markerText = (namespace: string, pod: string, attempt: number): string =>
  `k8s: log of pod ${namespace}/${pod} (attempt ${attempt}) follows`;

const isMarker = (line: LogLine): boolean => line.stream === 'system' && MARKER.test(line.text);

export interface ArchiveScan {
  /** The pod's marker is in the archive. */
  readonly found: boolean;
  /** How far into the pod's log the archive goes (START when not found). */
  readonly position: LogPosition;
  /** With `after`: an archive cursor just before the first line after `after`; undefined = from the start. */
  readonly resume?: { readonly cursor: string | undefined };
  /** Cursor after the last line of the whole archive. */
  readonly end: string | undefined;
}

/**
 * Read the run's archive once, front to back. With `after`, also find where a
 * reader at that position of this pod's log goes on: the first later line of
 * the pod, or the first line of a later section.
 */
export async function scanArchive(
  store: LogStore,
  runId: string,
  marker: string,
  after?: LogPosition,
): Promise<ArchiveScan> {
  let found = false;
  let inSection = false;
  let position = START;
  const isNew = after === undefined ? undefined : newLineFilter(after);
  let resumeAt: { cursor: string | undefined; index: number } | undefined;
  let cursor: string | undefined;
  for (;;) {
    const page = await store.read(
      runId,
      cursor === undefined ? { limit: SCAN_PAGE } : { cursor, limit: SCAN_PAGE },
    );
    for (const [index, line] of page.lines.entries()) {
      if (!found) {
        found = isMarker(line) && line.text === marker;
        inSection = found;
        continue;
      }
      if (inSection && isMarker(line)) inSection = false;
      if (inSection) position = advance(position, [{ ts: line.at }]);
      if (isNew !== undefined && resumeAt === undefined && (!inSection || isNew({ ts: line.at }))) {
        resumeAt = { cursor, index };
      }
    }
    if (page.lines.length === 0) break;
    cursor = page.nextCursor;
  }
  let resume: { cursor: string | undefined } | undefined;
  if (found && after !== undefined) {
    if (resumeAt === undefined) resume = { cursor };
    else if (resumeAt.index === 0) resume = { cursor: resumeAt.cursor };
    else {
      // Cursors are opaque: reach the middle of a page by reading exactly that many lines.
      const skip = await store.read(runId, {
        ...(resumeAt.cursor === undefined ? {} : { cursor: resumeAt.cursor }),
        limit: resumeAt.index,
      });
      resume = { cursor: skip.nextCursor };
    }
  }
  return resume === undefined ? { found, position, end: cursor } : { found, position, resume, end: cursor };
}

/** Append lines in batches (a store may cap one write). */
export async function appendAll(
  store: LogStore,
  runId: string,
  lines: readonly LogLineInput[],
): Promise<void> {
  for (let i = 0; i < lines.length; i += APPEND_BATCH) {
    await store.append(runId, lines.slice(i, i + APPEND_BATCH));
  }
}
