import * as z from '../../lib/zod.ts';
import { defaulted } from './fields.ts';

/** A sustained launch rate per second; 0 turns that backend's budget off. */
const perSecond = (fallback: number) =>
  defaulted(fallback, () => z.number().check(z.minimum(0), z.maximum(10_000)));
/** Launches allowed at once from a full bucket. */
const burst = (fallback: number) =>
  defaulted(fallback, () => z.int().check(z.minimum(1), z.maximum(100_000)));

/** How many runs may hold a slot at once; 0 turns that backend's cap off. */
const cap = (fallback: number) => defaulted(fallback, () => z.int().check(z.minimum(0), z.maximum(100_000)));

/**
 * Launch budgets: a token bucket per backend and scope (account/region,
 * subscription/region, project/region, cluster/namespace) that every
 * dispatcher shares. A burst beyond it waits queued with the reason
 * `waiting: <backend> launch budget` instead of being throttled by the cloud.
 */
export const launchBudgetSettings = {
  /**
   * ECS RunTask, per account and region. AWS documents ECS throttling as a token
   * bucket per account and Region ("Request throttling for the Amazon ECS API",
   * docs.aws.amazon.com/AmazonECS/latest/APIReference/request-throttling.html):
   * RunTask's bucket holds 100 tokens, refilled at 20 per second.
   */
  launch_budget_ecs_per_second: perSecond(20),
  launch_budget_ecs_burst: burst(100),
  /**
   * ACI container-group creations (ARM PUTs), per subscription and region. Azure
   * Resource Manager throttles writes with a token bucket per subscription and
   * region of 200 tokens refilled at 10 per second ("Request limits and
   * throttling", learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling);
   * the container-instance provider may throttle lower, which the launcher's 429 then defers.
   */
  launch_budget_aci_per_second: perSecond(10),
  launch_budget_aci_burst: burst(200),
  /**
   * Cloud Run job executions, per project and region. Google caps running job
   * executions at 1000 per project and region (cloud.google.com/run/quotas) but
   * publishes no per-second rate for RunJob that we found: 1 per second with a
   * burst of 100 keeps runs of up to a quarter of an hour under that cap.
   */
  launch_budget_gcp_per_second: perSecond(1),
  launch_budget_gcp_burst: burst(100),
  /**
   * Kubernetes pod creations, per cluster and namespace. Kubernetes sets no pod
   * rate of its own (a ResourceQuota counts pods, API Priority and Fairness
   * shares the API server); client-go's defaults (rest.Config QPS 5, burst 10)
   * are what a well-behaved controller sends.
   */
  launch_budget_kubernetes_per_second: perSecond(5),
  launch_budget_kubernetes_burst: burst(10),
  /**
   * Launch caps: quotas that count what runs at once rather than how fast it
   * starts. A run beyond one waits `dispatching` with the reason `waiting:
   * Cloud Run running executions` (or `waiting: Kubernetes pods per
   * namespace`) and launches when a run that holds a slot ends.
   *
   * Cloud Run running job executions, per project and region: Google's
   * published limit is "Maximum number of running Job executions: 1000, per
   * project and region" (Cloud Run "Quotas and limits",
   * cloud.google.com/run/quotas, read 2026-12). Lower it when other
   * workloads in the project run jobs too.
   */
  launch_cap_gcp_running_executions: cap(1000),
  /**
   * Pods at once per cluster and namespace. Kubernetes has no built-in limit:
   * a ResourceQuota with `pods: N` makes the API server refuse the N+1th pod
   * with 403 "exceeded quota" (which the launcher turns into a wait). 100 is
   * a namespace quota a shared cluster commonly grants; set it to the
   * namespace's quota, or 0 when it has none.
   */
  launch_cap_kubernetes_pods: cap(100),
  /** How long a run beyond a cap waits before it asks for a slot again (and as long again, spread). */
  launch_cap_wait_seconds: defaulted(10, () => z.int().check(z.minimum(1), z.maximum(900))),
};
