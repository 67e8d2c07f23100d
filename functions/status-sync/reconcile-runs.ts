import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { ScheduledEvent } from 'aws-lambda';
import type { AppDeps } from '../../shared/app/deps.ts';
import { type ReconcileOptions, type ReconcileReport, reconcileRuns } from '../../shared/app/reconcile.ts';
import {
  type SyncBackendsOptions,
  type SyncBackendsReport,
  syncBackends,
} from '../../shared/app/sync-backends.ts';
import { lambdaHandler } from '../../shared/composition/lambda.ts';

export interface ReconcileRunsReport {
  readonly sync: SyncBackendsReport;
  readonly reconcile: ReconcileReport;
}

/**
 * Scheduled handler (EventBridge rate rule, e.g. every minute): first ask the
 * backends about runs whose events may have been missed — adopt, settle with
 * the real outcome, fail a task that is gone, forward cancel requests — and
 * only then time out what is still past its deadline and re-enqueue queued
 * runs whose message was lost. In that order, so a run that really finished
 * is settled with its exit code rather than `timed_out`.
 *
 * @example
 * export const handler = makeReconcileRuns(deps, {
 *   sync: { staleAfterSeconds: 60, missingGraceSeconds: 120 },
 *   reconcile: { requeueAfterSeconds: 120, deadlineGraceSeconds: 60 },
 * });
 */
export function makeReconcileRuns(
  deps: AppDeps,
  options: {
    readonly sync: SyncBackendsOptions;
    readonly reconcile: ReconcileOptions;
    /** Findings as CloudWatch metrics (EMF), one datapoint per sweep. */
    readonly metrics?: Metrics;
  },
): (event?: ScheduledEvent) => Promise<ReconcileRunsReport> {
  return async () => {
    const sync = await syncBackends(deps, options.sync);
    const reconcile = await reconcileRuns(deps, options.reconcile);
    const metrics = options.metrics;
    if (metrics !== undefined) {
      metrics.addMetric('ReconcileTimedOut', MetricUnit.Count, reconcile.timedOut.length);
      metrics.addMetric('ReconcileRequeued', MetricUnit.Count, reconcile.requeued.length);
      metrics.addMetric('SyncSettled', MetricUnit.Count, sync.settled.length);
      metrics.addMetric('SyncAdvanced', MetricUnit.Count, sync.advanced.length);
      metrics.publishStoredMetrics();
    }
    return { sync, reconcile };
  };
}

/**
 * Every minute (infra: RECONCILE_EVERY). A run's backend is asked once its
 * state is a minute old, and a task ECS no longer knows fails the run only
 * after two; a queued run is re-enqueued after two minutes, and a deadline
 * gets a minute's grace for the runner's own timeout to land first.
 */
export const RECONCILE_SCHEDULE = {
  sync: { staleAfterSeconds: 60, missingGraceSeconds: 120 },
  reconcile: { requeueAfterSeconds: 120, deadlineGraceSeconds: 60 },
} as const satisfies { sync: SyncBackendsOptions; reconcile: ReconcileOptions };

export const handler = lambdaHandler((deps) =>
  makeReconcileRuns(deps, {
    ...RECONCILE_SCHEDULE,
    metrics: new Metrics({ namespace: 'RemoteWorker', serviceName: 'remote-worker' }),
  }),
);
