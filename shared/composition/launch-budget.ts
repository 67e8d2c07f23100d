import { InProcessLaunchBudgets } from '../adapters/local/launch-budget.ts';
import type { Settings } from '../config/settings.ts';
import type { Budget } from '../domain/launch-budget.ts';
import type { Runner } from '../domain/run.ts';
import type { LaunchBudgetScope, LaunchBudgetStore, LaunchGate } from '../ports/launch-budget.ts';
import type { LaunchCapScope, LaunchSlotStore } from '../ports/launch-cap.ts';

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

/** The cap settings per backend (what runs at once); 0 leaves that backend without one. */
export function capsFrom(settings: Settings): Partial<Record<Runner, number>> {
  const pairs: [Runner, number][] = [
    ['gcp', settings.launch_cap_gcp_running_executions],
    ['kubernetes', settings.launch_cap_kubernetes_pods],
  ];
  return Object.fromEntries(pairs.filter(([, n]) => n > 0));
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
 * container; in-process in local mode), and the caps, whose slots live in
 * `slots` (the runs table in AWS mode, the SQLite file in local mode; with
 * no slot store, nothing is capped). A cap shares its backend's scope key.
 *
 * @example
 * const launchBudget = buildLaunchGate(settings, { account, region }, new DynamoLaunchBudgets({ client, tableName }),
 *   new DynamoLaunchSlots({ client, tableName }));
 */
export function buildLaunchGate(
  settings: Settings,
  place: BudgetPlace,
  store: LaunchBudgetStore = new InProcessLaunchBudgets(),
  slots?: LaunchSlotStore,
): LaunchGate {
  const keys = scopeKeys(settings, place);
  const scopes: Partial<Record<Runner, LaunchBudgetScope>> = {};
  for (const [runner, budget] of Object.entries(budgetsFrom(settings)) as [Runner, Budget][]) {
    scopes[runner] = { key: keys[runner], budget };
  }
  if (slots === undefined) return { store, scopes };
  const caps: Partial<Record<Runner, LaunchCapScope>> = {};
  for (const [runner, cap] of Object.entries(capsFrom(settings)) as [Runner, number][]) {
    caps[runner] = { key: keys[runner], cap };
  }
  return { store, scopes, slots, caps, capWaitSeconds: settings.launch_cap_wait_seconds };
}

/** The account in an SQS queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`). */
export const accountOfQueueUrl = (url: string): string | undefined =>
  /^\/(\d{12})\//.exec(new URL(url).pathname)?.[1];
