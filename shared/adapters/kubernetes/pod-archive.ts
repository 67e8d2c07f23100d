import { KeyedLock } from '../../lib/keyed-lock.ts';
import type { Clock } from '../../ports/clock.ts';
import type { LogLineInput, LogStore } from '../../ports/log-store.ts';
import type { KubernetesHandle } from './handle.ts';
import type { KubeApi, PodRef } from './kube-api.ts';
import { appendAll, markerText, scanArchive } from './log-archive.ts';
import { advance, type LogPosition, type PodLogLine, streamOf, utcTimestamp } from './pod-log.ts';

/** The lock key of a pod's archive writers. */
export const podKey = (h: PodRef): string => `${h.namespace}/${h.pod}`;

/** An archive line keeps the kubelet's instant (in UTC, nanoseconds included) as `at`: see log-archive.ts. */
const toLogLine = (line: PodLogLine): LogLineInput => {
  const at = utcTimestamp(line.ts);
  return { stream: streamOf(line.text), text: line.text, ...(at === undefined ? {} : { at }) };
};

/**
 * Copies a pod's log into the archive LogStore (format: log-archive.ts),
 * one writer per pod at a time within this process (cancel, cleanup and a
 * follower may archive the same pod). Two processes archiving the same pod
 * at the same moment could append a line twice.
 *
 * @example
 * const archiver = new PodArchiver({ api, archive: logStore, clock });
 * await archiver.archivePod(run.id, handle, { final: true }); // lines appended
 */
export class PodArchiver {
  readonly archive: LogStore;
  readonly #api: KubeApi;
  readonly #clock: Clock;
  readonly #lock = new KeyedLock();

  constructor(deps: { readonly api: KubeApi; readonly archive: LogStore; readonly clock: Clock }) {
    this.#api = deps.api;
    this.archive = deps.archive;
    this.#clock = deps.clock;
  }

  /** Run `fn` holding the pod's archive lock. */
  exclusive<T>(h: PodRef, fn: () => Promise<T>): Promise<T> {
    return this.#lock.run(podKey(h), fn);
  }

  /**
   * Copy what the archive lacks of this pod's log into it, opening with the
   * pod's marker. Serialised per pod within this process.
   */
  archivePod(runId: string, h: KubernetesHandle, options: { readonly final: boolean }): Promise<number> {
    return this.exclusive(h, async () => this.archiveFrom(runId, h, await this.#open(runId, h), options));
  }

  /** Write the pod's marker unless the archive has it; the position the archive has reached in its log. */
  open(runId: string, h: KubernetesHandle): Promise<LogPosition> {
    return this.exclusive(h, () => this.#open(runId, h));
  }

  /** Append the pod's lines after `position`; the caller holds the pod's lock. */
  async archiveFrom(
    runId: string,
    h: KubernetesHandle,
    from: LogPosition,
    options: { readonly final: boolean },
  ): Promise<number> {
    let position = from;
    let count = 0;
    for (;;) {
      const read = await this.#api.readLog(h, position, options);
      if (read === 'gone' || read === 'not-started' || read.lines.length === 0) return count;
      await this.append(runId, read.lines);
      position = advance(position, read.lines);
      count += read.lines.length;
      if (!read.cut) return count;
    }
  }

  /** Append pod log lines as archive lines; the caller holds the pod's lock. */
  append(runId: string, lines: readonly PodLogLine[]): Promise<void> {
    return appendAll(this.archive, runId, lines.map(toLogLine));
  }

  async #open(runId: string, h: KubernetesHandle): Promise<LogPosition> {
    const marker = markerText(h.namespace, h.pod, h.attempt);
    const scan = await scanArchive(this.archive, runId, marker);
    if (!scan.found) {
      await this.archive.append(runId, [{ stream: 'system', text: marker, at: this.#clock.now() }]);
    }
    return scan.position;
  }
}
