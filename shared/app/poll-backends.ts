import type { Settings } from '../config/settings.ts';
import type { Runner } from '../domain/run.ts';
import { backoffMs } from '../lib/backoff.ts';
import { type Repeating, repeatWithoutOverlap } from '../lib/repeat.ts';
import { sleep } from '../lib/sleep.ts';
import type { AppDeps } from './deps.ts';
import { type SyncBackendsReport, syncBackends } from './sync-backends.ts';

/** Backends that push no status events: ACI, Cloud Run and Kubernetes are only known by asking. */
export const POLLED_BACKENDS: readonly Runner[] = ['aci', 'gcp', 'kubernetes'];

/**
 * The poller's options from the operator's settings: `poll_interval_seconds`,
 * `status_unknown_grace_seconds`, `cleanup_grace_seconds`. A task the backend
 * does not know yet fails the run only after ten sweeps, and never sooner
 * than two minutes (a Cloud Run execution or an ACI group can take that long
 * to appear after the create returned).
 */
export function pollerOptionsFrom(
  settings: Pick<
    Settings,
    'poll_interval_seconds' | 'status_unknown_grace_seconds' | 'cleanup_grace_seconds'
  >,
): BackendPollerOptions {
  return {
    intervalSeconds: settings.poll_interval_seconds,
    statusUnknownGraceSeconds: settings.status_unknown_grace_seconds,
    missingGraceSeconds: Math.max(120, 10 * settings.poll_interval_seconds),
    cancelGraceSeconds: settings.cleanup_grace_seconds,
  };
}

export interface BackendPollerOptions {
  /** Seconds between sweeps (`poll_interval_seconds`). */
  readonly intervalSeconds: number;
  /** A backend silent this long fails the run (`status_unknown_grace_seconds`). */
  readonly statusUnknownGraceSeconds: number;
  /** A task the backend does not know (yet) fails the run only after this long. */
  readonly missingGraceSeconds: number;
  /** Passed to `cancel` (`cleanup_grace_seconds`). */
  readonly cancelGraceSeconds: number;
  /** Ceiling of one run's backoff after repeated failures, default 60 s. */
  readonly maxBackoffSeconds?: number;
  readonly backends?: readonly Runner[];
}

/**
 * The status poller for backends without push events. Each sweep asks the
 * backend about every active run on it (the same `applyBackendStatus` rule as
 * the ECS events, so a late answer never moves a run backwards and a terminal
 * run never changes). A run whose backend failed to answer — throttling, 5xx,
 * network — is left alone for an exponentially growing pause (interval × 2ⁿ,
 * capped), so a throttled API is not hammered; after
 * `statusUnknownGraceSeconds` without an answer the run fails with the last
 * error, instead of waiting for its deadline.
 *
 * The backoff lives in this object (one process: local mode, or one Lambda
 * invocation that sweeps for a minute); the silence itself is recorded on the
 * run, so the grace holds across processes.
 *
 * @example
 * const poller = new BackendPoller(deps, { intervalSeconds: 3, statusUnknownGraceSeconds: 300, missingGraceSeconds: 120, cancelGraceSeconds: 30 });
 * await poller.runUntil(Date.now() + 50_000);
 */
export class BackendPoller {
  readonly #deps: Pick<AppDeps, 'store' | 'launchers' | 'clock' | 'logger' | 'credentials' | 'runSecrets'>;
  readonly #o: BackendPollerOptions;
  /** runId → failures in a row and when the run may be asked again. */
  readonly #backoff = new Map<string, { failures: number; untilMs: number }>();

  constructor(
    deps: Pick<AppDeps, 'store' | 'launchers' | 'clock' | 'logger' | 'credentials' | 'runSecrets'>,
    options: BackendPollerOptions,
  ) {
    this.#deps = deps;
    this.#o = options;
  }

  /** True when this deployment has a launcher the poller is responsible for. */
  get hasWork(): boolean {
    return (this.#o.backends ?? POLLED_BACKENDS).some((b) => this.#deps.launchers[b] !== undefined);
  }

  /**
   * Sweeps every `intervalSeconds` (never two at once; a failed sweep is
   * logged and the next one runs); undefined when no polled backend is
   * configured.
   */
  start(): Repeating | undefined {
    if (!this.hasWork) return undefined;
    return repeatWithoutOverlap(
      () => this.sweep(),
      this.#o.intervalSeconds * 1000,
      (error) => this.#deps.logger.error('poll failed', { error: error as Error }),
    );
  }

  /** One sweep over the active runs on the polled backends. */
  async sweep(): Promise<SyncBackendsReport> {
    const nowMs = this.#deps.clock.nowMs();
    const report = await syncBackends(this.#deps, {
      backends: this.#o.backends ?? POLLED_BACKENDS,
      staleAfterSeconds: 0,
      missingGraceSeconds: this.#o.missingGraceSeconds,
      cancelGraceSeconds: this.#o.cancelGraceSeconds,
      statusUnknownGraceSeconds: this.#o.statusUnknownGraceSeconds,
      skip: (runId) => (this.#backoff.get(runId)?.untilMs ?? 0) > nowMs,
    });
    for (const runId of [...report.observed, ...report.settled]) this.#backoff.delete(runId);
    const maxMs = (this.#o.maxBackoffSeconds ?? 60) * 1000;
    for (const runId of report.unknown) {
      const failures = (this.#backoff.get(runId)?.failures ?? 0) + 1;
      const pauseMs = backoffMs(failures, { baseMs: this.#o.intervalSeconds * 1000, maxMs });
      this.#backoff.set(runId, { failures, untilMs: this.#deps.clock.nowMs() + pauseMs });
    }
    return report;
  }

  /** Seconds the run is paused for, or 0 when it is asked on the next sweep (for tests and logs). */
  backoffSeconds(runId: string): number {
    const entry = this.#backoff.get(runId);
    return entry === undefined ? 0 : Math.max(0, (entry.untilMs - this.#deps.clock.nowMs()) / 1000);
  }

  /** Sweep every `intervalSeconds` until `deadlineMs` (a Lambda invocation's remaining time). */
  async runUntil(deadlineMs: number, pause: (ms: number) => Promise<void> = sleep): Promise<number> {
    let sweeps = 0;
    const intervalMs = this.#o.intervalSeconds * 1000;
    while (this.#deps.clock.nowMs() + intervalMs < deadlineMs) {
      const started = this.#deps.clock.nowMs();
      await this.sweep().catch((error: unknown) => {
        this.#deps.logger.warn('poll: sweep failed', { error: error as Error });
      });
      sweeps++;
      await pause(Math.max(0, intervalMs - (this.#deps.clock.nowMs() - started)));
    }
    return sweeps;
  }
}
