import { prepareTask } from '../app/task-prep.ts';
import { type Settings, selectedRunners } from '../config/settings.ts';
import type { Run, Runner } from '../domain/run.ts';
import type { Clock } from '../ports/clock.ts';
import type { Launchers } from '../ports/launcher.ts';
import type { LogReader, LogStore } from '../ports/log-store.ts';
import type { Logger } from '../ports/logger.ts';
import type { RunStore } from '../ports/run-store.ts';
import type { SecretSource } from '../ports/secret-source.ts';

/**
 * The one setting each in-cloud runner cannot be built without (ECS its cluster, ACI its resource
 * group, Cloud Run its project): with none set and none selected, no factory could build one.
 */
const CLOUD_RUNNER_ANCHORS = ['ansible_ecs_cluster', 'azure_resource_group', 'gcp_project_id'] as const;
const CLOUD_RUNNERS: readonly Runner[] = ['ecs', 'aci', 'gcp'];

/** The runner container of the task definitions `ansible_ecs_task_definitions` names. */
export const LOCAL_ECS_CONTAINER = 'runner';

/**
 * Local mode's in-cloud launchers: ECS, ACI and Cloud Run, each built when
 * its settings are complete (the Kubernetes pod runner is built beside, as it
 * may use the pod's own service account). ECS in local mode takes its task
 * definitions and their log group from `ansible_ecs_task_definitions` and
 * `ansible_ecs_log_group`; credentials come from the usual AWS, Azure and
 * Google environment. A runner a setting selects but that cannot be built is
 * named in the start-up log with why; its runs are refused with that reason.
 * With no cloud runner's settings at all, neither the launchers nor the AWS
 * SDKs are loaded.
 *
 * @example
 * const launchers = buildLocalCloudLaunchers({ settings, store, logs, clock, logger, secrets, prepareDeps });
 */
export async function buildLocalCloudLaunchers(options: {
  readonly settings: Settings;
  readonly store: RunStore;
  /** Local mode's own log store: what ACI runs leave before their container groups are deleted. */
  readonly logs: LogStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly secrets: SecretSource;
  /** What `prepareTask` needs here (stores, storage with staging, secrets, connection material). */
  readonly prepareDeps: Parameters<typeof prepareTask>[0];
}): Promise<Launchers> {
  const { settings, store, clock, logger } = options;
  const wanted = selectedRunners(settings);
  const anchored = CLOUD_RUNNER_ANCHORS.some((key) => settings[key] !== undefined);
  if (!anchored && !CLOUD_RUNNERS.some((r) => wanted.has(r))) return {};
  const [{ lazyAwsClients, lazyLogReader }, { buildCloudLaunchers }] = await Promise.all([
    import('./lazy-aws.ts'),
    import('./launchers.ts'),
  ]);
  // The AWS SDKs load when a launcher first calls them.
  const clients = lazyAwsClients();
  const logGroup = settings.ansible_ecs_log_group;
  const streams: { ecs?: (run: Run) => string | undefined } = {};
  // Without the log group there is no ECS runner (below), so nothing reads these.
  const cloudWatchLogs: LogReader =
    logGroup === undefined
      ? { read: async () => ({ lines: [], nextCursor: '' }) }
      : lazyLogReader(clients.logs, {
          logGroup,
          streamFor: async (runId) => {
            const run = await store.getRun(runId);
            return run === undefined ? undefined : streams.ecs?.(run);
          },
        });
  const built = buildCloudLaunchers({
    settings,
    clients: { ecs: clients.ecs, secretsManager: clients.secretsManager },
    // Without the log group, a task's output could not be read back: ECS counts as not configured.
    ecs: {
      taskDefinitions: logGroup === undefined ? {} : (settings.ansible_ecs_task_definitions ?? {}),
      taskDefinitionsKey:
        logGroup === undefined
          ? 'ansible_ecs_task_definitions, ansible_ecs_log_group'
          : 'ansible_ecs_task_definitions',
      containerName: LOCAL_ECS_CONTAINER,
      logStreamPrefix: 'run',
    },
    store,
    assets: options.prepareDeps.assets,
    logs: cloudWatchLogs,
    clock,
    logger,
    secrets: options.secrets,
    prepare: (run, prepareOptions) => prepareTask(options.prepareDeps, run, prepareOptions),
    runLogs: options.logs,
  });
  if (built.logStreams.ecs !== undefined) streams.ecs = built.logStreams.ecs;
  const { kubernetes: _builtBeside, ...launchers } = built.launchers;
  for (const [runner, why] of Object.entries(built.unavailable) as [Runner, string][]) {
    if (runner !== 'kubernetes' && wanted.has(runner)) {
      logger.warn('a runner the settings select is not available', { runner, reason: why });
    }
  }
  return launchers;
}
