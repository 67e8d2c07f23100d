import { once } from '../../lib/once.ts';
import * as z from '../../lib/zod.ts';
import { aciSettings } from './aci.ts';
import { cloudRunSettings } from './cloud-run.ts';
import { cloudSecretSettings } from './cloud-secrets.ts';
import { DISCOVERY_SETTINGS } from './discovery.ts';
import { ecsSettings } from './ecs.ts';
import { checkExecution, executionSettings } from './execution.ts';
import { buildShape, type LazyShape, type RuleContext, ruleContext, type ShapeOf } from './fields.ts';
import { HYPERVISOR_SETTINGS } from './hypervisors.ts';
import { checkIntegrations, integrationSettings } from './integrations.ts';
import { kubernetesSettings } from './kubernetes.ts';
import { launchBudgetSettings } from './launch-budget.ts';
import { pollingSettings } from './polling.ts';
import { runnerSettings } from './runners.ts';
import { sshKeySettings } from './ssh-keys.ts';
import { checkStorage, storageSettings } from './storage.ts';

/**
 * Every settings key, each area's keys spread into one object: each key is a
 * function that builds its schema (see SettingDef in fields.ts), so a process
 * builds only the keys it parses.
 *
 * A new area (a new runner, say) is a file beside these that exports its keys
 * (`export const fooSettings = { foo_url: () => z.optional(httpUrl()), … }`, a
 * default as `foo_port: defaulted(443, () => z.int())`) and, when keys depend
 * on each other, a `checkFoo(settings, check)`; spread the keys in below and
 * call the rules in checkSettings. Keys keep the seeds' snake_case names; each
 * is also read from the environment variable of the same name upper-cased,
 * with no other change.
 */
export const SETTING_SHAPE = {
  ...runnerSettings,
  ...ecsSettings,
  ...aciSettings,
  ...cloudRunSettings,
  ...kubernetesSettings,
  ...pollingSettings,
  // Launch budgets per backend: launch_budget_<backend>_per_second / _burst.
  ...launchBudgetSettings,
  ...sshKeySettings,
  // GCP Secret Manager and Azure Key Vault for those clouds' VM SSH keys.
  ...cloudSecretSettings,
  ...storageSettings,
  ...executionSettings,
  ...integrationSettings,
  // On-prem hypervisor integrations: <h>_enabled, <h>_host, <h>_user, <h>_password_secret.
  ...HYPERVISOR_SETTINGS,
  // Cloud VM discovery: discovery_clouds, per-cloud scopes, the schedule.
  ...DISCOVERY_SETTINGS,
} satisfies LazyShape;

export type SettingKey = keyof typeof SETTING_SHAPE;

/** The parsed settings: every key's output, defaults applied. */
export type Settings = z.output<z.ZodMiniObject<ShapeOf<typeof SETTING_SHAPE>>>;

/** Every area's rules across its keys, on settings whose every key parsed. */
export function checkSettings(settings: Settings, check: RuleContext): void {
  checkStorage(settings, check);
  checkIntegrations(settings, check);
  checkExecution(settings, check);
}

/**
 * The one settings schema, built on first use: every key in one strict object
 * (an unknown key is an error), then every area's rules. loadSettings parses
 * the keys it is given one by one and comes here only for the exact report of
 * a problem; the stack's synth (infra/config.ts) parses with it whole.
 */
export const settingsSchema = once(() =>
  z
    .strictObject(buildShape(SETTING_SHAPE))
    .check(z.superRefine((settings, ctx) => checkSettings(settings, ruleContext(ctx)))),
);
