import type { ECSClient } from '@aws-sdk/client-ecs';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { TokenCredential } from '@azure/identity';
import { awslogsStreamName } from '../adapters/cloudwatch-logs/stream-name.ts';
import { parseEcsHandle } from '../adapters/ecs/handle.ts';
import type { Settings } from '../config/settings.ts';
import { LauncherUnavailableError, LaunchRejectedError } from '../domain/errors.ts';
import type { Run, Runner } from '../domain/run.ts';
import { onFirstUse } from '../lib/on-first-use.ts';
import type { AssetStore } from '../ports/asset-store.ts';
import type { Clock } from '../ports/clock.ts';
import type { ClusterAuth } from '../ports/cluster-auth.ts';
import type { Launcher, Launchers, PreparedTask, PrepareOptions } from '../ports/launcher.ts';
import type { LogReader, LogStore } from '../ports/log-store.ts';
import type { Logger } from '../ports/logger.ts';
import type { RunStore } from '../ports/run-store.ts';
import type { SecretSource } from '../ports/secret-source.ts';
import { lazyLauncher } from './lazy-launcher.ts';
import {
  aciReadiness,
  type EcsDefinitions,
  ecsReadiness,
  gcpReadiness,
  kubernetesReadiness,
} from './runner-availability.ts';

/** How a mode runs ECS tasks: the task definitions per runner image (family, family:revision or ARN) and their runner container. */
export interface EcsRunnerConfig extends EcsDefinitions {
  /** The runner container in every task definition: its exit code is the run's. */
  readonly containerName: string;
  /** The awslogs `streamPrefix` of the runner container: streams are `<prefix>/<container>/<task id>`. */
  readonly logStreamPrefix: string;
  /** Secrets Manager name prefix for values minted for one run; unset, runs that need them are refused. */
  readonly runSecretsPrefix?: string | undefined;
  /** Family prefix of the per-run task definitions (runs with secrets). */
  readonly familyPrefix?: string | undefined;
}

/** What a backend's factory may use to build its launcher. */
export interface LauncherContext {
  readonly settings: Settings;
  /** The AWS clients the ECS runner calls, loaded and made on first use. */
  readonly clients: {
    readonly ecs: () => Promise<ECSClient>;
    readonly secretsManager: () => Promise<SecretsManagerClient>;
  };
  /** How this mode runs ECS tasks; undefined when it has no task definitions for them. */
  readonly ecs: EcsRunnerConfig;
  readonly store: RunStore;
  readonly assets: AssetStore;
  /** Output of every backend that writes to the CloudWatch Logs group (ECS). */
  readonly logs: LogReader;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Secret values, for backends that take values (ACI, Kubernetes) and for connection material. */
  readonly secrets: SecretSource;
  /** `prepareTask` over this deployment's stores, secrets, token preparation and checkouts. */
  readonly prepare: (run: Run, options?: PrepareOptions) => Promise<PreparedTask>;
  /**
   * Run output the control plane keeps itself (LOGS_TABLE, default RUNS_TABLE): what the relay
   * writes, and what ACI and Kubernetes runs leave before their objects are deleted.
   */
  readonly runLogs: LogStore;
}

/** A backend as this deployment runs it. */
export interface Backend {
  readonly launcher: Launcher;
  /** The LOG_GROUP stream holding a run's output on this backend (e.g. the task's awslogs stream). */
  readonly logStream?: (run: Run) => string | undefined;
}

/** Builds a backend, or answers why this deployment does not have it. */
export type LauncherFactory = (context: LauncherContext) => Backend | { readonly unavailable: string };

/**
 * The in-cloud runners either mode can launch, each built when its settings
 * are complete:
 * - `ecs`: one Fargate task per run on `ansible_ecs_cluster`, in
 *   `ansible_ecs_subnet_id`, from the configured task definitions; its output
 *   is the task's awslogs stream (`logStream`);
 * - `aci`, `gcp` (Cloud Run) and `kubernetes`, from their settings; their SDKs
 *   load on first use.
 * The relay (`local`) is each mode's own: an SQS queue to the on-prem agent,
 * or the in-process relay. A runner whose factory answers `unavailable` is
 * refused at submit with a message saying why.
 */
export const cloudLauncherFactories = {
  ecs: ({ ecs, settings, clients, logs, prepare }) => {
    const ready = ecsReadiness(settings, ecs);
    if ('unavailable' in ready) return ready;
    const { cluster, network } = ready.options;
    const definitions = ecs.taskDefinitions;
    const container = ecs.containerName;
    return {
      // The ECS and Secrets Manager SDKs load on the first call: of the functions that build every
      // launcher, the poller, the log reader and the dead-letter settler never reach ECS.
      launcher: lazyLauncher('ecs', async () => {
        const [
          { EcsLauncher },
          { describeSecretArn },
          { SecretsManagerRunSecrets },
          ecsClient,
          secretsManager,
        ] = await Promise.all([
          import('../adapters/ecs/launcher.ts'),
          import('../adapters/ecs/secret-arn.ts'),
          import('../adapters/secrets-manager/run-secrets.ts'),
          clients.ecs(),
          clients.secretsManager(),
        ]);
        return new EcsLauncher({
          ecs: ecsClient,
          cluster,
          taskDefinitions: definitions,
          containerName: container,
          network,
          // ECS fetches stored secrets itself, with the task's execution role: the dispatcher only describes them.
          // Reading stays possible for material minted here (an EKS kubeconfig needs the stored one first).
          prepare: (run, known) =>
            prepare(run, { resolveSecrets: false, ...(known === undefined ? {} : { known }) }),
          secretArn: describeSecretArn(secretsManager),
          ...(ecs.runSecretsPrefix === undefined
            ? {}
            : {
                runSecrets: new SecretsManagerRunSecrets({
                  client: secretsManager,
                  prefix: ecs.runSecretsPrefix,
                }),
              }),
          logs,
          ...(ecs.familyPrefix === undefined ? {} : { perRunFamilyPrefix: ecs.familyPrefix }),
        });
      }),
      logStream: (run) => {
        const handle = parseEcsHandle(run.launch?.handle);
        return handle === undefined
          ? undefined
          : awslogsStreamName(ecs.logStreamPrefix, container, handle.taskArn);
      },
    };
  },
  aci: ({ settings, clock, secrets, prepare, runLogs }) => {
    const ready = aciReadiness(settings);
    if ('unavailable' in ready) return ready;
    const aci = ready.options;
    const registry = aci.registry;
    const { subscriptionId } = aci;
    return {
      launcher: lazyLauncher(
        'aci',
        withCloudSdk(
          'aci',
          'aci',
          ([{ ContainerInstanceManagementClient }, { defaultAzureCredential }, { AciLauncher }]) => {
            /** `DefaultAzureCredential`, made on first use. */
            const azureCredential = (): TokenCredential => ({
              getToken: async (scopes, options) => (await defaultAzureCredential()).getToken(scopes, options),
            });
            return new AciLauncher({
              // Service principal, workload identity federation or managed identity, from AZURE_* variables.
              aci: new ContainerInstanceManagementClient(azureCredential(), subscriptionId),
              resourceGroup: aci.resourceGroup,
              location: aci.location,
              subnetIds: aci.subnetIds,
              ...(registry === undefined
                ? {}
                : {
                    registry: {
                      server: registry.server,
                      username: registry.username,
                      password: () => secrets.get(registry.passwordSecret),
                    },
                  }),
              // ACI takes values (secureValue), not references: the dispatcher resolves them.
              prepare: (run) => prepare(run),
              archive: runLogs,
              clock,
            });
          },
        ),
      ),
    };
  },
  kubernetes: ({ settings, clock, prepare, runLogs }) => {
    const ready = kubernetesReadiness(settings);
    if ('unavailable' in ready) return ready;
    return {
      launcher: lazyLauncher(
        'kubernetes',
        withCloudSdk('kubernetes', 'kubernetes', ({ buildKubernetesLauncher }) => {
          const built = buildKubernetesLauncher({
            settings,
            env: {},
            archive: runLogs,
            clock,
            prepare: (run) => prepare(run),
          });
          if ('unavailable' in built) throw new LaunchRejectedError(built.unavailable);
          return built.launcher;
        }),
      ),
    };
  },
  gcp: ({ settings, prepare }) => {
    const ready = gcpReadiness(settings);
    if ('unavailable' in ready) return ready;
    const gcp = ready.options;
    return {
      launcher: lazyLauncher(
        'gcp',
        withCloudSdk(
          'gcp',
          'gcp',
          ([{ ExecutionsClient, JobsClient, TasksClient }, { GoogleAuth }, { CloudRunLauncher }]) => {
            // Application Default Credentials (on Lambda: GOOGLE_APPLICATION_CREDENTIALS → workload identity federation).
            const auth = new GoogleAuth({ scopes: ['https://www.googleapis.com/auth/cloud-platform'] });
            return new CloudRunLauncher({
              ...gcp,
              jobs: new JobsClient({ fallback: true, auth }),
              executions: new ExecutionsClient({ fallback: true, auth }),
              tasks: new TasksClient({ fallback: true, auth }),
              http: auth,
              // Cloud Run resolves stored secrets from Secret Manager itself; only minted material reaches secretEnv.
              prepare: (run) => prepare(run, { resolveSecrets: false }),
            });
          },
        ),
      ),
    };
  },
} satisfies Record<Exclude<Runner, 'local'>, LauncherFactory>;

/**
 * The loaders of the cloud SDKs and the adapters built on them, behind the one
 * test of `RW_CLOUD_SDKS`: a compile-time constant in bundles built without
 * cloud SDKs (infra/bundling.ts), where esbuild folds it and drops every
 * loader, and with them the SDKs, from the bundle.
 */
const cloudSdks =
  process.env.RW_CLOUD_SDKS === 'none'
    ? undefined
    : {
        // Each launcher's adapter loads with its SDK: the functions that never launch on a cloud evaluate neither.
        aci: () =>
          Promise.all([
            import('@azure/arm-containerinstance'),
            import('../adapters/cluster-auth/aks-token.ts'),
            import('../adapters/aci/launcher.ts'),
          ]),
        kubernetes: () => import('./kubernetes.ts'),
        gcp: () =>
          Promise.all([
            import('../adapters/cloud-run/clients.ts'),
            import('google-auth-library'),
            import('../adapters/cloud-run/launcher.ts'),
          ]),
        clusterAuth: () => import('../adapters/cluster-auth/cluster-auth.ts'),
        gcpSecrets: () => import('../adapters/gcp-secret-manager/secret-source.ts'),
        azureSecrets: () =>
          Promise.all([
            import('@azure/keyvault-secrets'),
            import('../adapters/azure-key-vault/secret-source.ts'),
            import('../adapters/cluster-auth/aks-token.ts'),
          ]),
      };
type CloudSdks = NonNullable<typeof cloudSdks>;

/**
 * Load SDK `sdk` and `build` with it; in a bundle without the cloud SDKs, a
 * loader that refuses with LauncherUnavailableError naming `what`.
 */
export function withCloudSdk<K extends keyof CloudSdks, T>(
  what: string,
  sdk: K,
  build: (loaded: Awaited<ReturnType<CloudSdks[K]>>) => T | Promise<T>,
): () => Promise<T> {
  const loaders: CloudSdks | undefined = cloudSdks;
  if (loaders === undefined) {
    return () =>
      Promise.reject(
        new LauncherUnavailableError(
          `This function is bundled without the ${what} SDK (infra/handlers.ts controlsTasks); the dispatcher, poller and reconciler act on these tasks`,
        ),
      );
  }
  return async () => build((await loaders[sdk]()) as Awaited<ReturnType<CloudSdks[K]>>);
}

/**
 * Kubeconfig token preparation, loaded on first use (only the dispatcher
 * prepares tasks); left out of bundles built without the cloud SDKs.
 */
export function lazyClusterAuth(clock: Clock): ClusterAuth {
  const auth = onFirstUse(
    withCloudSdk('cluster token', 'clusterAuth', (m) => new m.CloudClusterAuth({ clock })),
  );
  return { prepare: async (target, stored) => (await auth()).prepare(target, stored) };
}

/**
 * Build every in-cloud launcher whose settings are complete, and say why each
 * other one is missing. `logStreams` maps a backend to the CloudWatch Logs
 * stream of a run's output, for the backends that write there.
 *
 * @example
 * const { launchers, unavailable } = buildCloudLaunchers(context);
 */
export function buildCloudLaunchers(context: LauncherContext): {
  readonly launchers: Launchers;
  readonly unavailable: Partial<Record<Runner, string>>;
  readonly logStreams: Partial<Record<Runner, (run: Run) => string | undefined>>;
} {
  const launchers: Partial<Record<Runner, Launcher>> = {};
  const unavailable: Partial<Record<Runner, string>> = {};
  const logStreams: Partial<Record<Runner, (run: Run) => string | undefined>> = {};
  for (const [runner, factory] of Object.entries(cloudLauncherFactories) as [Runner, LauncherFactory][]) {
    const built = factory(context);
    if ('unavailable' in built) {
      unavailable[runner] = built.unavailable;
      context.logger.debug('runner not available', { runner, reason: built.unavailable });
      continue;
    }
    launchers[runner] = built.launcher;
    if (built.logStream !== undefined) logStreams[runner] = built.logStream;
  }
  return { launchers, unavailable, logStreams };
}
