import * as z from 'zod';
import { aciSettings } from './aci.ts';
import { cloudRunSettings } from './cloud-run.ts';
import { cloudSecretSettings } from './cloud-secrets.ts';
import { DISCOVERY_SETTINGS } from './discovery.ts';
import { ecsSettings } from './ecs.ts';
import { checkExecution, executionSettings } from './execution.ts';
import { ruleContext } from './fields.ts';
import { HYPERVISOR_SETTINGS } from './hypervisors.ts';
import { checkIntegrations, integrationSettings } from './integrations.ts';
import { kubernetesSettings } from './kubernetes.ts';
import { launchBudgetSettings } from './launch-budget.ts';
import { pollingSettings } from './polling.ts';
import { runnerSettings } from './runners.ts';
import { sshKeySettings } from './ssh-keys.ts';
import { checkStorage, storageSettings } from './storage.ts';

/**
 * The one settings schema: every area's keys in one strict object (an unknown
 * key is an error), then every area's rules across its keys. Parsed once at
 * start-up (loadSettings in ../settings.ts).
 *
 * A new area (a new runner, say) is a file beside these that exports its keys
 * (`export const fooSettings = { foo_url: httpUrl().optional(), … }`) and, when
 * keys depend on each other, a `checkFoo(settings, check)`; spread the keys in
 * below and call the rules in superRefine. Keys keep the seeds' snake_case
 * names; each is also read from the environment variable of the same name
 * upper-cased, with no other change.
 */
export const SettingsSchema = z
  .strictObject({
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
  })
  .superRefine((settings, ctx) => {
    const check = ruleContext(ctx);
    checkStorage(settings, check);
    checkIntegrations(settings, check);
    checkExecution(settings, check);
  });
