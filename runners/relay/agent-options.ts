import type { AssetStorage } from '../../shared/app/asset-access.ts';
import type { ConnectionDeps } from '../../shared/app/connection-material.ts';
import type { TargetLookupDeps } from '../../shared/app/target-lookup.ts';
import type { AssetStore } from '../../shared/ports/asset-store.ts';
import type { Clock } from '../../shared/ports/clock.ts';
import type { ClusterAuth } from '../../shared/ports/cluster-auth.ts';
import type { CredentialBroker } from '../../shared/ports/credential-broker.ts';
import type { Executor } from '../../shared/ports/executor.ts';
import type { LogStore } from '../../shared/ports/log-store.ts';
import type { Logger } from '../../shared/ports/logger.ts';
import type { RunSecretStore } from '../../shared/ports/run-secret-store.ts';
import type { RunStore } from '../../shared/ports/run-store.ts';
import type { SecretSource } from '../../shared/ports/secret-source.ts';
import type { TargetStore } from '../../shared/ports/target-store.ts';
import type { WorkQueue } from '../../shared/ports/work-queue.ts';

/** What the relay agent (agent.ts) works with: its stores, queue, executor and limits. */
export interface RelayAgentOptions {
  /** Stable id of this relay host; runs it claims carry `relay:<id>` as owner. */
  readonly id: string;
  readonly store: RunStore;
  readonly targets: TargetStore;
  readonly queue: WorkQueue;
  readonly logs: LogStore;
  readonly executor: Executor;
  readonly secrets: SecretSource;
  readonly assets: AssetStore;
  /** How runs reach their asset when `assets` is an object store (read URLs); default `assets` as is. */
  readonly storage?: AssetStorage;
  /** Lifetime of an asset read URL (`start_deadline_seconds`). */
  readonly startDeadlineSeconds?: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Directory for per-run work directories. */
  readonly workRoot: string;
  /** Most runs executing at once (RELAY_CONCURRENCY, default 3). */
  readonly concurrency?: number;
  /** Long-poll wait; SQS allows up to 20 s. */
  readonly pollWaitSeconds?: number;
  /** How long a received message stays hidden; renewed while its run executes. */
  readonly visibilityTimeoutSeconds?: number;
  /** How often a running run's record is re-read for a cancel request. */
  readonly cancelPollMs?: number;
  /** SIGTERM → SIGKILL grace when a run is cancelled or times out. */
  readonly killGraceMs?: number;
  /** SSH key names and the Portainer connection (connection material); none when absent. */
  readonly settings?: ConnectionDeps['settings'];
  /** Discovered cloud VMs, so runs on them find their target. */
  readonly discovery?: TargetLookupDeps['discovery'];
  /** Token preparation for EKS/AKS/GKE kubeconfigs. */
  readonly clusterAuth?: ClusterAuth;
  /** Just-in-time checkouts for registered databases, checked in when the run ends. */
  readonly credentials?: CredentialBroker;
  /** Per-run secrets (plaintext passwords sent at submit), deleted when the run ends. */
  readonly runSecrets?: RunSecretStore;
}
