import type { Run } from '../../domain/run.ts';
import type { Clock } from '../../ports/clock.ts';
import {
  LOG_PAGE_DEFAULT_LINES,
  LOG_PAGE_MAX_LINES,
  type LogPage,
  logPageSize,
} from '../../ports/log-store.ts';
import { type KubernetesHandle, podNameFor } from './handle.ts';
import type { KubeApi } from './kube-api.ts';
import { markerText, scanArchive } from './log-archive.ts';
import type { PodArchiver } from './pod-archive.ts';
import {
  advance,
  decodeLogCursor,
  encodeLogCursor,
  type LogPosition,
  START,
  streamOf,
  utcTimestamp,
} from './pod-log.ts';

/**
 * Pages of a run's log for `Launcher.logs`: from the pod's log while the pod
 * exists, from the archive once it is gone, with one cursor format for both
 * (pod-log.ts) so a reader crosses from one to the other without a gap.
 *
 * @example
 * const pages = new LogPages({ api, archiver, clock });
 * const page = await pages.read(handle, run, cursor, 1000);
 */
export class LogPages {
  readonly #api: KubeApi;
  readonly #archiver: PodArchiver;
  readonly #clock: Clock;
  readonly #pageLines: number;

  constructor(deps: {
    readonly api: KubeApi;
    readonly archiver: PodArchiver;
    readonly clock: Clock;
    /** Most lines one page holds, below the `limit` a caller asks for (tests use small pages). */
    readonly pageLines?: number;
  }) {
    this.#api = deps.api;
    this.#archiver = deps.archiver;
    this.#clock = deps.clock;
    this.#pageLines = deps.pageLines ?? LOG_PAGE_MAX_LINES;
  }

  /**
   * Lines after `cursor`: from the pod's log while the pod exists, from the
   * archive once it is gone. A cursor of the pod's log goes on in the
   * archive at the same line; a cursor of an earlier attempt's pod goes on in
   * the archive after that pod's lines (or, if that pod was never archived,
   * at the start of the current pod). Without a cursor: the current pod's log
   * while it runs (an earlier attempt's lines are in the archive), the whole
   * archive once it is gone.
   */
  async read(h: KubernetesHandle, run: Run, cursor?: string, limit?: number): Promise<LogPage> {
    const size = Math.min(logPageSize(limit) ?? LOG_PAGE_DEFAULT_LINES, this.#pageLines);
    const at = cursor === undefined ? undefined : decodeLogCursor(cursor);
    if (at?.kind === 'archive') return this.#archivePage(run.id, at.cursor, size);

    if (at !== undefined && at.attempt !== h.attempt) {
      const earlier = podNameFor({ runId: run.id, attempt: at.attempt });
      const page = await this.#archiveAfter(run.id, h.namespace, earlier, at.attempt, at.position, size);
      if (page !== undefined) return page;
    }
    const position = at !== undefined && at.attempt === h.attempt ? at.position : START;
    const live = await this.#livePage(h, position, size);
    if (live !== undefined) return live;
    // The pod is gone. From the start: the whole archive, every attempt behind its marker.
    if (at === undefined) return this.#archivePage(run.id, undefined, size);
    const archived = await this.#archiveAfter(run.id, h.namespace, h.pod, h.attempt, position, size);
    if (archived !== undefined) return archived;
    // Gone without a trace in the archive: nothing more will come from this pod.
    return { lines: [], nextCursor: encodeLogCursor({ kind: 'pod', attempt: h.attempt, position }) };
  }

  /** One page of the pod's log after `position`; undefined when the pod is gone. */
  async #livePage(h: KubernetesHandle, position: LogPosition, size: number): Promise<LogPage | undefined> {
    const read = await this.#api.readLog(h, position, { final: false });
    if (read === 'gone') return undefined;
    const lines = read === 'not-started' ? [] : read.lines.slice(0, size);
    const next = advance(position, lines);
    return {
      lines: lines.map((line, i) => ({
        seq: position.n + i + 1,
        at: utcTimestamp(line.ts) ?? this.#clock.now(),
        stream: streamOf(line.text),
        text: line.text,
      })),
      nextCursor: encodeLogCursor({ kind: 'pod', attempt: h.attempt, position: next }),
    };
  }

  async #archivePage(runId: string, cursor: string | undefined, limit: number): Promise<LogPage> {
    const archive = this.#archiver.archive;
    const page = await archive.read(runId, cursor === undefined ? { limit } : { cursor, limit });
    return { lines: page.lines, nextCursor: encodeLogCursor({ kind: 'archive', cursor: page.nextCursor }) };
  }

  /** The archive page after `position` of this pod's log; undefined when the pod's log is not in the archive. */
  async #archiveAfter(
    runId: string,
    namespace: string,
    pod: string,
    attempt: number,
    position: LogPosition,
    limit: number,
  ): Promise<LogPage | undefined> {
    const marker = markerText(namespace, pod, attempt);
    const scan = await scanArchive(this.#archiver.archive, runId, marker, position);
    if (!scan.found || scan.resume === undefined) return undefined;
    return this.#archivePage(runId, scan.resume.cursor, limit);
  }
}
