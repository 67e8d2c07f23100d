import type { Settings } from '../config/settings.ts';
import type { AssetStore } from '../ports/asset-store.ts';
import type { Clock } from '../ports/clock.ts';
import type { CredentialBroker } from '../ports/credential-broker.ts';
import type { LaunchGate } from '../ports/launch-budget.ts';
import type { Launchers } from '../ports/launcher.ts';
import type { LogReader } from '../ports/log-store.ts';
import type { Logger } from '../ports/logger.ts';
import type { RunSecretStore } from '../ports/run-secret-store.ts';
import type { RunStore } from '../ports/run-store.ts';
import type { TargetStore } from '../ports/target-store.ts';
import type { WorkQueue } from '../ports/work-queue.ts';
import type { AssetStorage } from './asset-access.ts';
import type { DiscoveryCache } from './discovery.ts';

/** Whether `local` (relay) runs can be served here, and why not. */
export interface RelayAvailability {
  readonly available: boolean;
  readonly reason?: string;
}

/** What the use cases need; each mode's composition root fills it with its adapters. */
export interface AppDeps {
  readonly store: RunStore;
  readonly targets: TargetStore;
  readonly dispatchQueue: WorkQueue;
  readonly logs: LogReader;
  readonly assets: AssetStore;
  /**
   * The active storage backend and, in local mode, the object store local assets are staged in for
   * in-cloud runners. Absent: `assets` alone, as what it is.
   */
  readonly storage?: AssetStorage;
  readonly settings: Settings;
  readonly launchers: Launchers;
  readonly relay: RelayAvailability;
  readonly clock: Clock;
  readonly newId: () => string;
  readonly logger: Logger;
  /** Just-in-time checkouts (Password Safe), checked in when a run ends; absent when not configured. */
  readonly credentials?: CredentialBroker;
  /**
   * Where plaintext passwords sent at submit are kept for their run's
   * lifetime (local: per-run files; AWS: Secrets Manager under
   * RUN_SECRETS_PREFIX). Absent: such runs are refused.
   */
  readonly runSecrets?: RunSecretStore;
  /** Discovered cloud VMs (discovery_clouds); absent when no cloud is listed. */
  readonly discovery?: DiscoveryCache;
  /** Launch budgets per backend (shared/app/launch-budget.ts); absent: launches are not rate-limited here. */
  readonly launchBudget?: LaunchGate;
}

/** The storage this mode has, as the submit-time check and task preparation see it. */
export const storageOf = (deps: Pick<AppDeps, 'assets' | 'storage'>): AssetStorage =>
  deps.storage ?? { setup: { active: deps.assets.backend }, assets: deps.assets };
