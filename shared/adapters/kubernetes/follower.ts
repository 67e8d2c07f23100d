import { Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { sleep } from '../../lib/sleep.ts';
import { kubeError } from './errors.ts';
import type { KubernetesHandle } from './handle.ts';
import type { KubeApi } from './kube-api.ts';
import { CONTAINER_NAME } from './manifests.ts';
import { type PodArchiver, podKey } from './pod-archive.ts';
import { advance, type LogPosition, newLineFilter, parsePodLog, sinceTimeOf } from './pod-log.ts';
import { hasEnded, hasStarted } from './pod-status.ts';

/** Consecutive failed follow streams before `follow` gives up. */
const FOLLOW_FAILURES_MAX = 5;

interface Follow {
  readonly runId: string;
  readonly controller: AbortController;
  readonly done: Promise<{ archived: number }>;
  /** `done` with its failure swallowed: what cleanup waits for. */
  readonly settled: Promise<unknown>;
}

/**
 * Streams pods' logs into the archive as they are written (`follow=true`
 * through the client's `Log`), at most one follower per pod. A stream the
 * API server closes early is opened again where it stopped; after
 * FOLLOW_FAILURES_MAX failed streams in a row the follow fails.
 *
 * @example
 * const followers = new PodFollowers({ api, archiver, pollIntervalSeconds: 3 });
 * const { archived } = await followers.follow(run.id, handle); // until the pod has ended
 */
export class PodFollowers {
  readonly #api: KubeApi;
  readonly #archiver: PodArchiver;
  readonly #pollMs: number;
  /** Per pod (`<ns>/<pod>`): the `follow` streaming it into the archive. */
  readonly #follows = new Map<string, Follow>();

  constructor(deps: {
    readonly api: KubeApi;
    readonly archiver: PodArchiver;
    readonly pollIntervalSeconds?: number;
  }) {
    this.#api = deps.api;
    this.#archiver = deps.archiver;
    this.#pollMs = (deps.pollIntervalSeconds ?? 3) * 1000;
  }

  /** A follower is archiving this pod. */
  has(h: KubernetesHandle): boolean {
    return this.#follows.has(podKey(h));
  }

  follow(runId: string, h: KubernetesHandle, signal?: AbortSignal): Promise<{ archived: number }> {
    const key = podKey(h);
    const existing = this.#follows.get(key);
    if (existing !== undefined) return existing.done;
    const controller = new AbortController();
    if (signal?.aborted === true) controller.abort();
    signal?.addEventListener('abort', () => controller.abort(), { once: true });
    const done = this.#followLoop(runId, h, controller.signal).finally(() => this.#follows.delete(key));
    this.#follows.set(key, { runId, controller, done, settled: done.catch(() => undefined) });
    return done;
  }

  /** Stop every follower of the run and wait until each has let go of its pod. */
  async stop(runId: string): Promise<void> {
    for (const follow of [...this.#follows.values()].filter((f) => f.runId === runId)) {
      follow.controller.abort();
      await follow.settled;
    }
  }

  async #followLoop(runId: string, h: KubernetesHandle, signal: AbortSignal): Promise<{ archived: number }> {
    const pollMs = this.#pollMs;
    let position = await this.#archiver.open(runId, h);
    let archived = 0;
    let failures = 0;
    while (!signal.aborted) {
      const pod = await this.#api.readPod(h.namespace, h.pod);
      if (pod === undefined) break;
      if (hasEnded(pod)) {
        archived += await this.#archiver.exclusive(h, () =>
          signal.aborted
            ? Promise.resolve(0)
            : this.#archiver.archiveFrom(runId, h, position, { final: true }),
        );
        break;
      }
      if (!hasStarted(pod)) {
        await sleep(pollMs, signal);
        continue;
      }
      try {
        const streamed = await this.#stream(runId, h, position, signal);
        failures = 0;
        archived += streamed.count;
        position = streamed.position;
        // A stream that ended with nothing new: the container is ending; let its status catch up.
        if (streamed.count === 0) await sleep(pollMs, signal);
      } catch (error) {
        failures += 1;
        if (failures >= FOLLOW_FAILURES_MAX) throw kubeError(error, `follow the log of pod ${h.pod}`);
        await sleep(pollMs, signal);
      }
    }
    return { archived };
  }

  /**
   * One `follow=true` stream from `from`, appending complete new lines to the
   * archive as they arrive. Ends when the API server ends the stream, when
   * `signal` aborts, or when the pod has ended and the stream still has not
   * (a connection that died without closing).
   */
  async #stream(
    runId: string,
    h: KubernetesHandle,
    from: LogPosition,
    signal: AbortSignal,
  ): Promise<{ position: LogPosition; count: number }> {
    const isNew = newLineFilter(from);
    const decoder = new StringDecoder('utf8');
    let position = from;
    let count = 0;
    let pending = '';
    const sink = new Writable({
      write: (chunk: Buffer | string, _encoding, callback) => {
        pending += typeof chunk === 'string' ? chunk : decoder.write(chunk);
        const newline = pending.lastIndexOf('\n');
        if (newline < 0) return callback();
        const lines = parsePodLog(pending.slice(0, newline + 1), { final: false }).filter(isNew);
        pending = pending.slice(newline + 1);
        if (lines.length === 0) return callback();
        this.#archiver
          .exclusive(h, async () => {
            // Stopped (by cleanup): cleanup archives the rest itself, from what the archive holds.
            if (signal.aborted) return;
            await this.#archiver.append(runId, lines);
            position = advance(position, lines);
            count += lines.length;
          })
          .then(() => callback(), callback);
      },
    });

    const stop = new AbortController();
    const ended = new Promise<void>((resolve, reject) => {
      sink.on('finish', resolve);
      sink.on('error', reject);
      stop.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    // Awaited below; if the request fails first, a later sink error must not go unhandled.
    ended.catch(() => {});
    const onAbort = () => stop.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const sinceTime = sinceTimeOf(from);
    let request: AbortController | undefined;
    let watchdog: NodeJS.Timeout | undefined;
    try {
      request = await this.#api.log.log(h.namespace, h.pod, CONTAINER_NAME, sink, {
        follow: true,
        timestamps: true,
        ...(sinceTime === undefined ? {} : { sinceTime }),
      });
      let strikes = 0;
      watchdog = setInterval(() => {
        this.#api.readPod(h.namespace, h.pod).then(
          (pod) => {
            strikes = pod === undefined || hasEnded(pod) ? strikes + 1 : 0;
            if (strikes >= 2) stop.abort();
          },
          () => {},
        );
      }, this.#pollMs);
      await ended;
      return { position, count };
    } finally {
      clearInterval(watchdog);
      signal.removeEventListener('abort', onAbort);
      request?.abort();
      // Wait for an append in flight, so the caller's position is final.
      await this.#archiver.exclusive(h, async () => {});
    }
  }
}
