import type { ContainerInstanceManagementClient } from '@azure/arm-containerinstance';
import type { Settings } from '../../config/settings.ts';
import type { Run } from '../../domain/run.ts';
import type { Clock } from '../../ports/clock.ts';
import type { PreparedTask } from '../../ports/launcher.ts';
import type { LogStore } from '../../ports/log-store.ts';
import { AciNotConfiguredError } from './errors.ts';

/** The ACI plumbing from the operator's settings (seeds' key names); the registry password stays a secret NAME. */
export interface AciSettings {
  readonly subscriptionId: string;
  readonly resourceGroup: string;
  readonly location: string;
  /** `ansible_aci_subnet_id`, one id or several comma-separated: VNet injection. */
  readonly subnetIds: readonly string[];
  readonly registry?: {
    readonly server: string;
    readonly username: string;
    /** The NAME of the secret holding the password; the composition root resolves it. */
    readonly passwordSecret: string;
  };
}

type AciSettingKeys =
  | 'azure_resource_group'
  | 'azure_subscription_id'
  | 'azure_location'
  | 'ansible_aci_subnet_id'
  | 'ansible_aci_acr_server'
  | 'ansible_aci_acr_username'
  | 'ansible_aci_acr_password_secret';

/**
 * Read the ACI settings. Undefined when none of them is set (this deployment
 * does not use ACI). Throws AciNotConfiguredError with the seeds' message,
 * naming every missing key, when ACI is half configured: the resource group,
 * subscription and location are all required, and registry credentials need
 * server, username and password secret together.
 *
 * @example
 * aciOptionsFromSettings({ azure_subscription_id: 'sub', azure_location: 'westeurope' })
 * // throws "Ansible ACI runner is not configured: set azure_resource_group"
 */
export function aciOptionsFromSettings(settings: Pick<Settings, AciSettingKeys>): AciSettings | undefined {
  const s = settings;
  const anySet = [
    s.azure_resource_group,
    s.azure_subscription_id,
    s.azure_location,
    s.ansible_aci_subnet_id,
    s.ansible_aci_acr_server,
    s.ansible_aci_acr_username,
    s.ansible_aci_acr_password_secret,
  ].some((v) => v !== undefined);
  if (!anySet) return undefined;

  const registryKeys = {
    ansible_aci_acr_server: s.ansible_aci_acr_server,
    ansible_aci_acr_username: s.ansible_aci_acr_username,
    ansible_aci_acr_password_secret: s.ansible_aci_acr_password_secret,
  };
  const registryWanted = Object.values(registryKeys).some((v) => v !== undefined);
  const missing = [
    ...(s.azure_resource_group === undefined ? ['azure_resource_group'] : []),
    ...(s.azure_subscription_id === undefined ? ['azure_subscription_id'] : []),
    ...(s.azure_location === undefined ? ['azure_location'] : []),
    // Registry credentials are all or nothing: ACI needs the server, a user and a password.
    ...(registryWanted
      ? Object.keys(registryKeys).filter((k) => registryKeys[k as keyof typeof registryKeys] === undefined)
      : []),
  ];
  if (
    missing.length > 0 ||
    s.azure_resource_group === undefined ||
    s.azure_subscription_id === undefined ||
    s.azure_location === undefined
  ) {
    throw new AciNotConfiguredError(missing);
  }
  const subnetIds = (s.ansible_aci_subnet_id ?? '')
    .split(',')
    .map((id) => id.trim())
    .filter((id) => id !== '');
  const { ansible_aci_acr_server: server, ansible_aci_acr_username: username } = registryKeys;
  const passwordSecret = registryKeys.ansible_aci_acr_password_secret;
  return {
    subscriptionId: s.azure_subscription_id,
    resourceGroup: s.azure_resource_group,
    location: s.azure_location,
    subnetIds,
    ...(server !== undefined && username !== undefined && passwordSecret !== undefined
      ? { registry: { server, username, passwordSecret } }
      : {}),
  };
}

export interface AciRegistryCredentials {
  readonly server: string;
  readonly username: string;
  /**
   * The password value, or how to get it (the composition root resolves the
   * secret named by `ansible_aci_acr_password_secret`; a function lets a
   * synchronous factory defer that to the first launch). Sent only in
   * `imageRegistryCredentials[].password`, never logged or quoted in errors.
   */
  readonly password: string | (() => Promise<string>);
}

export interface AciLauncherOptions {
  /** Bound to the subscription (`azure_subscription_id`). */
  readonly aci: ContainerInstanceManagementClient;
  /** `azure_resource_group`: where new groups are created (a handle keeps its own). */
  readonly resourceGroup: string;
  /** `azure_location`. */
  readonly location: string;
  /** Subnet resource ids for VNet injection; none = no network configuration. */
  readonly subnetIds?: readonly string[];
  readonly registry?: AciRegistryCredentials;
  /** The run's TaskSpec and secret values (shared/app/task-prep.ts `prepareTask`, values resolved). */
  readonly prepare: (run: Run) => Promise<PreparedTask>;
  /** Where `cleanup` keeps a run's output before it deletes the group; `logs` reads it afterwards. */
  readonly archive: LogStore;
  /** Name of the one container; default `runner`. */
  readonly containerName?: string;
  /** CPU cores; default 1. */
  readonly cpu?: number;
  /** Memory in GB; default 2. */
  readonly memoryInGB?: number;
  /** Interval of the SDK's long-running-operation pollers (it waits 2 s when unset). */
  readonly pollIntervalMs?: number;
  readonly clock?: Clock;
}
