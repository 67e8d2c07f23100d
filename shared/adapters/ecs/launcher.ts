import {
  ConflictException,
  DeregisterTaskDefinitionCommand,
  DescribeTaskDefinitionCommand,
  DescribeTasksCommand,
  type ECSClient,
  type Failure,
  ListTaskDefinitionsCommand,
  ListTasksCommand,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
  type Secret,
  StopTaskCommand,
  type Task,
  type TaskOverride,
} from '@aws-sdk/client-ecs';
import type { PreparedTask } from '../../app/task-prep.ts';
import type { Settings } from '../../config/settings.ts';
import { LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import type { BackendStatus, Launcher, LaunchRequest } from '../../ports/launcher.ts';
import type { LogPage, LogReader } from '../../ports/log-store.ts';
import type { RunSecrets } from '../secrets-manager/run-secrets.ts';
import { ecsError } from './errors.ts';
import {
  clientTokenFor,
  clusterName,
  formatEcsHandle,
  groupFor,
  parseEcsHandle,
  type RunAttempt,
  startedByFor,
} from './handle.ts';
import { ecsTaskStatus } from './task-outcome.ts';

/** "A total of 8192 characters are allowed for overrides", JSON punctuation included (RunTask API reference). */
export const ECS_OVERRIDES_MAX_CHARS = 8192;
/** StopTask `reason`: up to 255 characters. */
const STOP_REASON_MAX = 255;
/** Task definition family: up to 255 letters, digits, `-` and `_`. */
const FAMILY_MAX = 255;

export const RUN_ID_TAG = 'remote-worker:run-id';
export const ATTEMPT_TAG = 'remote-worker:attempt';

export interface EcsNetwork {
  readonly subnets: readonly string[];
  readonly securityGroups: readonly string[];
  readonly assignPublicIp: boolean;
}

/**
 * `ansible_ecs_subnet_id` (one id or several, comma-separated),
 * `ansible_ecs_security_group_ids`, `ansible_ecs_assign_public_ip`.
 * Undefined when no subnet is configured: ECS is then not configured at all.
 */
export function ecsNetworkFromSettings(
  settings: Pick<
    Settings,
    'ansible_ecs_subnet_id' | 'ansible_ecs_security_group_ids' | 'ansible_ecs_assign_public_ip'
  >,
): EcsNetwork | undefined {
  const subnets = (settings.ansible_ecs_subnet_id ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (subnets.length === 0) return undefined;
  return {
    subnets,
    securityGroups: settings.ansible_ecs_security_group_ids ?? [],
    assignPublicIp: settings.ansible_ecs_assign_public_ip,
  };
}

export interface EcsLauncherOptions {
  readonly ecs: ECSClient;
  /** Cluster name or ARN. */
  readonly cluster: string;
  /**
   * Runner image → task definition (`family`, `family:revision` or ARN) whose
   * container `containerName` runs that image with the task shim as entrypoint.
   */
  readonly taskDefinitions: Readonly<Record<string, string>>;
  readonly containerName: string;
  readonly network: EcsNetwork;
  /**
   * The secret-free TaskSpec for a run (shared/app/task-prep.ts `prepareTask`).
   * Only `spec` is read: `secretEnv` is never touched, because no secret value
   * may reach a RunTask request (see the class comment).
   */
  readonly prepare: (run: Run) => Promise<PreparedTask>;
  /**
   * Secret name → full Secrets Manager ARN, which ECS needs in `valueFrom`
   * (a bare name is accepted for SSM parameters only). Must not read the value:
   * `DescribeSecret`, not `GetSecretValue`. A name that is already an ARN may be returned as is.
   */
  readonly secretArn: (name: string) => Promise<string>;
  /**
   * Where values minted for one run (a token-prepared kubeconfig, a checked-out
   * password) are stored so the task can reference them; without it such runs
   * are refused.
   */
  readonly runSecrets?: RunSecrets;
  /** Where the task's output can be read (the CloudWatch Logs reader in AWS mode). */
  readonly logs: LogReader;
  /** Prefix of the per-run task definition families; default `remote-worker-run-`. */
  readonly perRunFamilyPrefix?: string;
  /** Fargate platform version; ECS's default (LATEST) when absent. */
  readonly platformVersion?: string;
}

/**
 * The `ecs` runner: one Fargate task per run.
 *
 * Idempotent under redelivery. ECS honours `clientToken` (`<runId>#<attempt>`)
 * for 24 h per cluster, but an emulator may not, and a token cannot find a task
 * again after a crash; so before every RunTask the launcher lists the tasks
 * `startedBy` this run and attempt and adopts one if it exists.
 *
 * Secrets. RunTask overrides have no `secrets` field, and a value in override
 * `environment` would be readable by anyone with `ecs:DescribeTasks` and land
 * in CloudTrail. So a run with secret bindings gets its own task definition
 * revision (family `<prefix><runId>`): a copy of the image's task definition
 * whose runner container adds `secrets: [{ name: 'RW_SECRET_<n>', valueFrom:
 * <secret ARN> }]`. ECS resolves the values with the task's execution role
 * right before the container starts; the control plane never handles them.
 * `cleanup` deregisters that family. Runs without secrets use the shared task
 * definition unchanged.
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

  constructor(options: EcsLauncherOptions) {
    if (options.network.subnets.length === 0) {
      throw new RangeError('EcsLauncher needs at least one subnet (ansible_ecs_subnet_id)');
    }
    this.#o = options;
    this.#cluster = clusterName(options.cluster);
  }

  async launch({ run, image }: LaunchRequest): Promise<string> {
    const key: RunAttempt = { runId: run.id, attempt: run.attempt };
    let clientToken: string;
    let startedBy: string;
    let group: string;
    try {
      clientToken = clientTokenFor(key);
      startedBy = startedByFor(key);
      group = groupFor(key);
    } catch (error) {
      throw new LaunchRejectedError(`Run id ${run.id} cannot be used as an ECS task key: ${error}`);
    }
    const baseDefinition = this.#o.taskDefinitions[image];
    if (baseDefinition === undefined) {
      throw new LaunchRejectedError(
        `No ECS task definition is configured for image ${image} (configured: ${Object.keys(this.#o.taskDefinitions).join(', ') || 'none'})`,
      );
    }

    const existing = await this.#findTask(startedBy);
    if (existing !== undefined) return this.#handleOf(existing);

    const prepared = await this.#o.prepare(run);
    const { spec } = prepared;
    const overrides: TaskOverride = {
      containerOverrides: [
        {
          name: this.#o.containerName,
          environment: [
            { name: 'RW_TASK', value: JSON.stringify(spec) },
            { name: 'RW_RUN_ID', value: run.id },
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

    const secretEnvs = secretEnvNamesOf(spec);
    const taskDefinition =
      secretEnvs.length === 0
        ? baseDefinition
        : await this.#perRunDefinition(
            run,
            baseDefinition,
            await this.#secretReferences(run, prepared, secretEnvs),
          );

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
   * A launch that failed for good settles the run without a handle, so no
   * cleanup will ever run for it: deregister its own task definition now. A
   * retryable failure keeps it for the next attempt to reuse.
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
   * Deregister the run's own task definition revisions and delete the values
   * minted for it, if it had any; nothing else is left behind.
   */
  async cleanup(_handle: string, run: Run): Promise<void> {
    if (
      this.#o.runSecrets !== undefined &&
      (MINTING_KINDS.has(run.kind) || run.managedAccount !== undefined)
    ) {
      await this.#o.runSecrets.deleteFor(run.id);
    }
    if (run.secrets.length === 0 && !MAY_REFERENCE_SECRETS.has(run.kind)) return;
    const family = this.#perRunFamily(run.id);
    try {
      for (const arn of await this.#activeRevisions(family)) {
        await this.#o.ecs.send(new DeregisterTaskDefinitionCommand({ taskDefinition: arn }));
      }
    } catch (error) {
      throw ecsError(error, 'DeregisterTaskDefinition');
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

  /**
   * `valueFrom` for each secret env: the ARN of the stored secret it names, or
   * of a per-run secret holding a value minted for this run.
   */
  async #secretReferences(run: Run, prepared: PreparedTask, envs: readonly string[]): Promise<Secret[]> {
    const secrets: Secret[] = [];
    for (const env of envs) {
      const name = prepared.secretRefs[env];
      if (name !== undefined) {
        try {
          secrets.push({ name: env, valueFrom: await this.#o.secretArn(name) });
        } catch (error) {
          if (error instanceof LaunchRejectedError || error instanceof LauncherUnavailableError) throw error;
          throw new LaunchRejectedError(`Secret ${name} (for ${env}) could not be resolved to an ARN`, {
            cause: error,
          });
        }
        continue;
      }
      const value = prepared.secretEnv[env];
      if (value === undefined)
        throw new LaunchRejectedError(`The task expects secret ${env}, but nothing provides it`);
      if (this.#o.runSecrets === undefined) {
        throw new LaunchRejectedError(
          `Run ${run.id} needs ${env} minted at launch, but this ECS launcher has no per-run secret store`,
        );
      }
      secrets.push({ name: env, valueFrom: await this.#o.runSecrets.put(run.id, env, value) });
    }
    return secrets;
  }

  #perRunFamily(runId: string): string {
    const prefix = this.#o.perRunFamilyPrefix ?? 'remote-worker-run-';
    return `${prefix}${runId.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, FAMILY_MAX);
  }

  async #activeRevisions(family: string): Promise<string[]> {
    const arns: string[] = [];
    let nextToken: string | undefined;
    do {
      const page = await this.#o.ecs.send(
        new ListTaskDefinitionsCommand({
          familyPrefix: family,
          status: 'ACTIVE',
          ...(nextToken === undefined ? {} : { nextToken }),
        }),
      );
      // familyPrefix is an exact family match on ECS; the check guards against a looser emulator.
      arns.push(
        ...(page.taskDefinitionArns ?? []).filter((arn) => arn.includes(`:task-definition/${family}:`)),
      );
      nextToken = page.nextToken;
    } while (nextToken !== undefined);
    return arns;
  }

  /**
   * The run's own revision: the image's task definition with the secret
   * references added to the runner container. Reused when a redelivery finds
   * one already registered.
   */
  async #perRunDefinition(run: Run, baseDefinition: string, secrets: readonly Secret[]): Promise<string> {
    const family = this.#perRunFamily(run.id);
    try {
      const [existing] = await this.#activeRevisions(family);
      if (existing !== undefined) return existing;

      const { taskDefinition: base } = await this.#o.ecs.send(
        new DescribeTaskDefinitionCommand({ taskDefinition: baseDefinition }),
      );
      if (base === undefined)
        throw new LaunchRejectedError(`ECS task definition ${baseDefinition} not found`);
      if (base.executionRoleArn === undefined) {
        throw new LaunchRejectedError(
          `ECS task definition ${baseDefinition} has no execution role, which ECS needs to fetch secrets (ansible_ecs_execution_role_arn)`,
        );
      }
      const containers = base.containerDefinitions ?? [];
      if (!containers.some((c) => c.name === this.#o.containerName)) {
        throw new LaunchRejectedError(
          `ECS task definition ${baseDefinition} has no container named ${this.#o.containerName}`,
        );
      }
      const { taskDefinition: registered } = await this.#o.ecs.send(
        new RegisterTaskDefinitionCommand({
          family,
          containerDefinitions: containers.map((c) =>
            c.name === this.#o.containerName
              ? {
                  ...c,
                  secrets: [
                    ...(c.secrets ?? []).filter((s) => !secrets.some((r) => r.name === s.name)),
                    ...secrets,
                  ],
                }
              : c,
          ),
          executionRoleArn: base.executionRoleArn,
          ...pick(base, [
            'taskRoleArn',
            'networkMode',
            'volumes',
            'placementConstraints',
            'requiresCompatibilities',
            'cpu',
            'memory',
            'pidMode',
            'ipcMode',
            'proxyConfiguration',
            'inferenceAccelerators',
            'ephemeralStorage',
            'runtimePlatform',
            'enableFaultInjection',
          ]),
          tags: [{ key: RUN_ID_TAG, value: run.id }],
        }),
      );
      const arn = registered?.taskDefinitionArn;
      if (arn === undefined) throw new LauncherUnavailableError('ECS RegisterTaskDefinition returned no ARN');
      return arn;
    } catch (error) {
      throw ecsError(error, 'RegisterTaskDefinition');
    }
  }
}

/** Run kinds whose connection material may be minted at launch (kubeconfig tokens, database logins). */
const MINTING_KINDS: ReadonlySet<Run['kind']> = new Set(['cluster_play', 'k8s_op', 'database_play']);
/** Run kinds that may reference secrets without a binding of their own (SSH keys, Portainer, minted material). */
const MAY_REFERENCE_SECRETS: ReadonlySet<Run['kind']> = new Set([...MINTING_KINDS, 'vm', 'portainer']);

/** Every env the spec expects a secret value in. */
function secretEnvNamesOf(spec: PreparedTask['spec']): string[] {
  return [
    ...new Set([
      ...spec.secretVars.map((v) => v.env),
      ...(spec.secretEnvNames ?? []),
      ...(spec.sshKeyEnv === undefined ? [] : [spec.sshKeyEnv]),
    ]),
  ];
}

function pick<T extends object, K extends keyof T>(from: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (from[k] !== undefined && from[k] !== null) out[k] = from[k];
  return out;
}

/**
 * Size of the overrides as ECS counts them: the JSON text of the structure.
 * Counted in UTF-8 bytes, which equals the character count for ASCII and is
 * never less than it, so a spec we accept is never refused by ECS.
 */
export function overridesSize(overrides: TaskOverride): number {
  return Buffer.byteLength(JSON.stringify(overrides), 'utf8');
}

/** RunTask answered without a task: capacity problems pass, anything else is the request's fault. */
function runTaskFailure(failures: readonly Failure[] | undefined): Error {
  const text = (failures ?? [])
    .map((f) => [f.reason, f.detail].filter((s) => s !== undefined && s !== '').join(': '))
    .join('; ');
  if (text === '') return new LauncherUnavailableError('ECS RunTask returned neither a task nor a failure');
  if (/capacity|RESOURCE:|AGENT|throttl|try again/i.test(text)) {
    return new LauncherUnavailableError(`ECS RunTask could not place the task, will retry (${text})`);
  }
  return new LaunchRejectedError(`ECS RunTask refused the task (${text})`);
}

function isTaskNotFound(error: unknown): boolean {
  const e = error as { name?: string; message?: string } | undefined;
  return e?.name === 'InvalidParameterException' && /task was not found|not found/i.test(e.message ?? '');
}
