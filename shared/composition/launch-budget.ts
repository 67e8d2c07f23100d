import { InProcessLaunchBudgets } from '../adapters/local/launch-budget.ts';
import type { Settings } from '../config/settings.ts';
import type { Budget } from '../domain/launch-budget.ts';
import type { Runner } from '../domain/run.ts';
import type { LaunchBudgetScope, LaunchBudgetStore, LaunchGate } from '../ports/launch-budget.ts';

/** Where the AWS account and region of this deployment come from (ECS's bucket is per account and region). */
export interface BudgetPlace {
  readonly account?: string | undefined;
  readonly region?: string | undefined;
}

/** The budget settings per backend; a rate of 0 leaves that backend without one. */
export function budgetsFrom(settings: Settings): Partial<Record<Runner, Budget>> {
  const pairs: [Runner, number, number][] = [
    ['ecs', settings.launch_budget_ecs_per_second, settings.launch_budget_ecs_burst],
    ['aci', settings.launch_budget_aci_per_second, settings.launch_budget_aci_burst],
    ['gcp', settings.launch_budget_gcp_per_second, settings.launch_budget_gcp_burst],
    ['kubernetes', settings.launch_budget_kubernetes_per_second, settings.launch_budget_kubernetes_burst],
  ];
  return Object.fromEntries(
    pairs
      .filter(([, perSecond]) => perSecond > 0)
      .map(([runner, perSecond, burst]) => [runner, { perSecond, burst }]),
  );
}

/**
 * Each backend's bucket key: the scope its cloud throttles in. Names and ids
 * only (no credential: a kubeconfig is not part of the key).
 */
export function scopeKeys(settings: Settings, place: BudgetPlace): Record<Runner, string> {
  const or = (v: string | undefined) => v ?? '-';
  return {
    ecs: `ecs#${or(place.account)}/${or(place.region)}`,
    aci: `aci#${or(settings.azure_subscription_id)}/${or(settings.azure_location)}`,
    gcp: `gcp#${or(settings.gcp_project_id)}/${or(settings.gcp_ansible_cloud_run_region ?? settings.gcp_region)}`,
    kubernetes: `kubernetes#${settings.kubernetes_namespace}`,
    local: 'local',
  };
}

/**
 * The launch gate a mode's dispatcher uses: the budgets from settings, keyed
 * per scope, kept in `store` (DynamoDB in AWS mode, shared by every
 * container; in-process in local mode).
 *
 * @example
 * const launchBudget = buildLaunchGate(settings, new DynamoLaunchBudgets({ client, tableName }), { account, region });
 */
export function buildLaunchGate(
  settings: Settings,
  place: BudgetPlace,
  store: LaunchBudgetStore = new InProcessLaunchBudgets(),
): LaunchGate {
  const keys = scopeKeys(settings, place);
  const scopes: Partial<Record<Runner, LaunchBudgetScope>> = {};
  for (const [runner, budget] of Object.entries(budgetsFrom(settings)) as [Runner, Budget][]) {
    scopes[runner] = { key: keys[runner], budget };
  }
  return { store, scopes };
}

/** The account in an SQS queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`). */
export const accountOfQueueUrl = (url: string): string | undefined =>
  /^\/(\d{12})\//.exec(new URL(url).pathname)?.[1];
