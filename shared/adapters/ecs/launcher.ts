import {
  ConflictException,
  DescribeTasksCommand,
  type Failure,
  ListTasksCommand,
  RunTaskCommand,
  StopTaskCommand,
  type Task,
  type TaskOverride,
} from '@aws-sdk/client-ecs';
import { LaunchRejectedError } from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import type {
  BackendStatus,
  KnownForLaunch,
  Launcher,
  LaunchRequest,
  PreparedTask,
} from '../../ports/launcher.ts';
import type { LogPage } from '../../ports/log-store.ts';
import { launchOrAdopt } from '../launch-or-adopt.ts';
import type { EcsLauncherOptions } from './config.ts';
import { ecsError } from './errors.ts';
import {
  ATTEMPT_TAG,
  clientTokenFor,
  clusterName,
  formatEcsHandle,
  groupFor,
  parseEcsHandle,
  RUN_ID_TAG,
  startedByFor,
} from './handle.ts';
import { ECS_OVERRIDES_MAX_CHARS, isTaskNotFound, overridesSize, runTaskFailure } from './run-task.ts';
import {
  mayHaveMintedSecrets,
  perRunEnvsOf,
  perRunSecretReferences,
  secretEnvNamesOf,
  storedSecretReferences,
} from './secret-refs.ts';
import { SharedSecretDefinitions } from './shared-definitions.ts';

/** Override variable naming the per-run secrets the task shim fetches itself (runners/shim/secret-fetch.ts). */
const SECRET_REFS_ENV = 'RW_SECRET_REFS';

import { ecsTaskStatus } from './task-outcome.ts';

/** StopTask `reason`: up to 255 characters. */
const STOP_REASON_MAX = 255;

/** What a run attempt's task is found and deduplicated by (handle.ts). */
interface TaskKeys {
  readonly clientToken: string;
  readonly startedBy: string;
  readonly group: string;
}

/**
 * The `ecs` runner: one Fargate task per run.
 *
 * Idempotent under redelivery. ECS honours `clientToken` (`<runId>#<attempt>`)
 * for 24 h per cluster, but an emulator may not, and a token cannot find a task
 * again after a crash; so on a redelivery (`LaunchRequest.redelivery`, the run
 * was already dispatching) the launcher lists the tasks `startedBy` this run
 * and attempt and adopts one if it exists. A first delivery has just claimed
 * the run on a new attempt, so nothing can exist yet and it does not look.
 *
 * Secrets. RunTask overrides have no `secrets` field, and a value in override
 * `environment` would be readable by anyone with `ecs:DescribeTasks` and land
 * in CloudTrail. So secrets reach the task as task-definition `secrets:
 * [{ name, valueFrom: <secret ARN> }]`, which ECS resolves with the task's
 * execution role right before the container starts; the control plane never
 * handles them. Stored secrets (the SSH key, the Portainer token, bound
 * secrets) use a shared revision per content hash (SharedSecretDefinitions),
 * registered once and reused. A run's own values — minted at launch, or
 * passwords submitted with it — sit in the per-run secret store, and only
 * their references (names or ARNs, never values) travel in the override
 * `RW_SECRET_REFS`; the task shim reads them with its task role
 * (GetSecretValue, per-run prefix only) into the same variables before the
 * tool starts. So no run registers a task definition of its own. Runs
 * without stored secrets use the configured task definition unchanged.
 *
 * Task spec. It travels in the `RW_TASK` override variable. Overrides are
 * limited to 8,192 characters; a larger spec is refused with
 * LaunchRejectedError rather than sent by reference: a Fargate task cannot
 * read the dispatcher's files (`RW_TASK_FILE`), and there is no blob store
 * port yet (the limit is reached only with very large extra vars).
 *
 * @example
 * const launcher = new EcsLauncher({
 *   ecs: new ECSClient({}), cluster: 'remote-worker',
 *   taskDefinitions: { 'chrweav/ansible-cloud': 'remote-worker-ansible-cloud' },
 *   containerName: 'runner', network: ecsNetworkFromSettings(settings)!,
 *   prepare: (run) => prepareTask({ store, assets, secrets }, run),
 *   secretArn: describeSecretArn(secretsManager), logs: cloudWatchReader,
 * });
 * const handle = await launcher.launch({ run, image: 'chrweav/ansible-cloud' }); // 'ecs:remote-worker/arn:aws:ecs:…'
 */
export class EcsLauncher implements Launcher {
  readonly backend = 'ecs' as const;
  readonly #o: EcsLauncherOptions;
  readonly #cluster: string;
  readonly #shared: SharedSecretDefinitions;

  constructor(options: EcsLauncherOptions) {
    if (options.network.subnets.length === 0) {
      throw new RangeError('EcsLauncher needs at least one subnet (ansible_ecs_subnet_id)');
    }
    this.#o = options;
    this.#cluster = clusterName(options.cluster);
    this.#shared = new SharedSecretDefinitions({
      ecs: options.ecs,
      containerName: options.containerName,
      familyPrefix: options.perRunFamilyPrefix,
    });
  }

  async launch({ run, image, redelivery, known }: LaunchRequest): Promise<string> {
    const baseDefinition = this.#o.taskDefinitions[image];
    if (baseDefinition === undefined) {
      throw new LaunchRejectedError(
        `No ECS task definition is configured for image ${image} (configured: ${Object.keys(this.#o.taskDefinitions).join(', ') || 'none'})`,
      );
    }
    return launchOrAdopt(run, {
      resource: 'an ECS task (client token, startedBy and group)',
      nameFor: (key): TaskKeys => ({
        clientToken: clientTokenFor(key),
        startedBy: startedByFor(key),
        group: groupFor(key),
      }),
      // Only a redelivery can find a task of this attempt: a first delivery has just claimed the run.
      adopt: async ({ startedBy }) => {
        if (redelivery === false) return undefined;
        const existing = await this.#findTask(startedBy);
        return existing === undefined ? undefined : this.#handleOf(existing);
      },
      start: (keys) => this.#runTask(run, baseDefinition, keys, known),
    });
  }

  /** RunTask for the attempt, with its secrets' references and the spec in the overrides. */
  async #runTask(
    run: Run,
    baseDefinition: string,
    { clientToken, startedBy, group }: TaskKeys,
    known: KnownForLaunch | undefined,
  ): Promise<string> {
    const prepared = await this.#o.prepare(run, known);
    const { spec } = prepared;
    const secretEnvs = secretEnvNamesOf(spec);
    const perRunEnvs = perRunEnvsOf(run, prepared, secretEnvs);
    const storedEnvs = secretEnvs.filter((env) => !perRunEnvs.has(env));
    const perRunRefs = await perRunSecretReferences(this.#o, run, prepared, [...perRunEnvs]);
    const overrides: TaskOverride = {
      containerOverrides: [
        {
          name: this.#o.containerName,
          environment: [
            { name: 'RW_TASK', value: JSON.stringify(spec) },
            { name: 'RW_RUN_ID', value: run.id },
            ...(perRunEnvs.size === 0 ? [] : [{ name: SECRET_REFS_ENV, value: JSON.stringify(perRunRefs) }]),
          ],
        },
      ],
    };
    const size = overridesSize(overrides);
    if (size > ECS_OVERRIDES_MAX_CHARS) {
      throw new LaunchRejectedError(
        `task spec too large for ECS overrides (${size} chars > ${ECS_OVERRIDES_MAX_CHARS}); move extra vars to a file asset`,
      );
    }

    const taskDefinition = await this.#taskDefinitionFor(baseDefinition, prepared, storedEnvs);

    const n = this.#o.network;
    let tasks: Task[] | undefined;
    let failures: Failure[] | undefined;
    try {
      ({ tasks, failures } = await this.#o.ecs.send(
        new RunTaskCommand({
          cluster: this.#o.cluster,
          taskDefinition,
          launchType: 'FARGATE',
          count: 1,
          clientToken,
          startedBy,
          group,
          tags: [
            { key: RUN_ID_TAG, value: run.id },
            { key: ATTEMPT_TAG, value: String(run.attempt) },
          ],
          networkConfiguration: {
            awsvpcConfiguration: {
              subnets: [...n.subnets],
              ...(n.securityGroups.length === 0 ? {} : { securityGroups: [...n.securityGroups] }),
              assignPublicIp: n.assignPublicIp ? 'ENABLED' : 'DISABLED',
            },
          },
          overrides,
          ...(this.#o.platformVersion === undefined ? {} : { platformVersion: this.#o.platformVersion }),
        }),
      ));
    } catch (error) {
      // Same token, different parameters: the task from the first call exists; adopt it.
      const adopted = error instanceof ConflictException ? error.resourceIds?.[0] : undefined;
      if (adopted !== undefined) return formatEcsHandle({ cluster: this.#cluster, taskArn: adopted });
      throw await this.#abandon(run, ecsError(error, 'RunTask'));
    }
    const taskArn = tasks?.[0]?.taskArn;
    if (taskArn !== undefined) return formatEcsHandle({ cluster: this.#cluster, taskArn });
    throw await this.#abandon(run, runTaskFailure(failures));
  }

  /**
   * The configured task definition when the run needs no stored secret, else
   * the shared revision carrying the stored secrets' references (SSH key,
   * Portainer token, bound secrets), one per content, registered once.
   */
  async #taskDefinitionFor(baseDefinition: string, prepared: PreparedTask, storedEnvs: readonly string[]) {
    if (storedEnvs.length === 0) return baseDefinition;
    const references = await storedSecretReferences(this.#o, prepared, storedEnvs);
    return this.#shared.revisionFor(baseDefinition, references);
  }

  /**
   * A launch that failed for good settles the run without a handle, so no
   * cleanup will ever run for it: delete the values minted for it now. A
   * retryable failure keeps them for the next attempt to overwrite.
   */
  async #abandon(run: Run, error: Error): Promise<Error> {
    if (error instanceof LaunchRejectedError) {
      await this.cleanup('', run).catch(() => {});
    }
    return error;
  }

  async status(handle: string, _run?: Run): Promise<BackendStatus> {
    const h = this.#parse(handle);
    let tasks: Task[] | undefined;
    let failures: Failure[] | undefined;
    try {
      ({ tasks, failures } = await this.#o.ecs.send(
        new DescribeTasksCommand({ cluster: h.cluster, tasks: [h.taskArn] }),
      ));
    } catch (error) {
      throw ecsError(error, 'DescribeTasks');
    }
    const task = tasks?.find((t) => t.taskArn === h.taskArn) ?? tasks?.[0];
    if (task === undefined) {
      const failure = failures?.[0];
      return {
        state: 'missing',
        reason: `ECS no longer knows task ${h.taskArn}${failure?.reason === undefined ? '' : ` (${failure.reason})`}; stopped tasks are kept for about an hour`,
      };
    }
    // A status ECS does not document: not started as far as we can tell.
    return ecsTaskStatus(task, this.#o.containerName)?.status ?? { state: 'pending' };
  }

  logs(_handle: string, run: Run, cursor?: string, limit?: number): Promise<LogPage> {
    return this.#o.logs.read(run.id, {
      ...(cursor === undefined ? {} : { cursor }),
      ...(limit === undefined ? {} : { limit }),
    });
  }

  /**
   * StopTask with a reason. ECS sends SIGTERM and, after the container's
   * `stopTimeout` from the task definition (Fargate default 30 s, max 120 s),
   * SIGKILL; StopTask has no per-call grace, so `graceSeconds` is not used.
   */
  async cancel(handle: string, run: Run, _graceSeconds: number): Promise<void> {
    const h = this.#parse(handle);
    const reason = `remote-worker: run ${run.id} was cancelled or timed out`.slice(0, STOP_REASON_MAX);
    try {
      await this.#o.ecs.send(new StopTaskCommand({ cluster: h.cluster, task: h.taskArn, reason }));
    } catch (error) {
      // Already gone: the stop has nothing left to do.
      if (isTaskNotFound(error)) return;
      throw ecsError(error, 'StopTask');
    }
  }

  /**
   * Delete the values minted for the run, if it had any; nothing else is left
   * behind (shared revisions stay for the next run; submitted passwords are
   * deleted by the run's end, as for every backend).
   */
  async cleanup(_handle: string, run: Run): Promise<void> {
    if (this.#o.runSecrets !== undefined && mayHaveMintedSecrets(run)) {
      await this.#o.runSecrets.deleteFor(run.id);
    }
  }

  #parse(handle: string) {
    const h = parseEcsHandle(handle);
    if (h === undefined) throw new LaunchRejectedError(`Not an ECS launch handle: ${handle}`);
    return h;
  }

  #handleOf(taskArn: string): string {
    return formatEcsHandle({ cluster: this.#cluster, taskArn });
  }

  /**
   * A task this run and attempt already started. ListTasks shows only running
   * tasks unless asked for stopped ones, and a task that already finished must
   * be adopted too, never started again.
   */
  async #findTask(startedBy: string): Promise<string | undefined> {
    try {
      for (const desiredStatus of ['RUNNING', 'STOPPED'] as const) {
        const { taskArns } = await this.#o.ecs.send(
          new ListTasksCommand({ cluster: this.#o.cluster, startedBy, desiredStatus }),
        );
        // Two tasks can only exist when the backend ignored the client token; adopt the same one every time.
        const first = [...(taskArns ?? [])].sort()[0];
        if (first !== undefined) return first;
      }
      return undefined;
    } catch (error) {
      throw ecsError(error, 'ListTasks');
    }
  }
}
