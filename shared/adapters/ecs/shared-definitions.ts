import { createHash } from 'node:crypto';
import {
  DescribeTaskDefinitionCommand,
  type ECSClient,
  RegisterTaskDefinitionCommand,
  type Secret,
  type TaskDefinition,
} from '@aws-sdk/client-ecs';
import { LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import { ecsError } from './errors.ts';

/** Task definition family: up to 255 letters, digits, `-` and `_`. */
const FAMILY_MAX = 255;
/** The per-run family prefix's default (EcsLauncherOptions.perRunFamilyPrefix). */
const DEFAULT_FAMILY_PREFIX = 'remote-worker-run-';
/** Hex digits of the content hash in a shared revision's family name. */
const HASH_CHARS = 16;

/** The fields of a task definition a copy keeps (RegisterTaskDefinition's input, minus family and containers). */
const COPIED = [
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
] as const;

/**
 * A copy of `base` whose `containerName` container also reads `secrets`
 * (replacing any of the same name), registered under `family`. Refuses a base
 * without an execution role (ECS fetches secrets with it) or without the container.
 *
 * @example
 * const input = withSecrets(base, 'runner', [{ name: 'RW_SSH_KEY', valueFrom }], 'remote-worker-ansible-s0a1b…', tags);
 */
export function withSecrets(
  base: TaskDefinition,
  baseName: string,
  containerName: string,
  secrets: readonly Secret[],
  family: string,
): ConstructorParameters<typeof RegisterTaskDefinitionCommand>[0] {
  if (base.executionRoleArn === undefined) {
    throw new LaunchRejectedError(
      `ECS task definition ${baseName} has no execution role, which ECS needs to fetch secrets (ansible_ecs_execution_role_arn)`,
    );
  }
  const containers = base.containerDefinitions ?? [];
  if (!containers.some((c) => c.name === containerName)) {
    throw new LaunchRejectedError(`ECS task definition ${baseName} has no container named ${containerName}`);
  }
  const copied: Partial<Pick<TaskDefinition, (typeof COPIED)[number]>> = {};
  for (const k of COPIED)
    if (base[k] !== undefined && base[k] !== null) Object.assign(copied, { [k]: base[k] });
  return {
    family,
    containerDefinitions: containers.map((c) =>
      c.name === containerName
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
    ...copied,
  };
}

/** The base task definition, or LaunchRejectedError when ECS does not know it. */
export async function describeBase(ecs: ECSClient, name: string): Promise<TaskDefinition> {
  const { taskDefinition } = await ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: name }));
  if (taskDefinition === undefined) throw new LaunchRejectedError(`ECS task definition ${name} not found`);
  return taskDefinition;
}

/**
 * Task definitions that carry stored secrets — the deployment's SSH key, the
 * Portainer token, a named secret a run binds — shared by every run with the
 * same secret references: one revision per content hash of (base task
 * definition, secret references), family `<prefix>shared-<hash>` (the per-run
 * prefix, so the IAM grants for per-run families cover it), registered
 * once and then reused by every run and every container. Per container the
 * ARN is kept in memory, so a run with a known set of references costs no
 * ECS call at all; the first use in a container costs one
 * DescribeTaskDefinition (found) or three calls (registered). A burst of
 * runs therefore makes no RegisterTaskDefinition per run (its rate limit is
 * low), and nothing is left to deregister when a run ends.
 *
 * Values of one run alone (checked-out passwords, token-prepared
 * kubeconfigs, submitted passwords) never get here: the task shim fetches
 * them itself from the per-run store (RW_SECRET_REFS, see EcsLauncher).
 *
 * @example
 * const shared = new SharedSecretDefinitions({ ecs, containerName: 'runner' });
 * const arn = await shared.revisionFor('remote-worker-ansible', [{ name: 'RW_SSH_KEY', valueFrom: keyArn }]);
 */
export class SharedSecretDefinitions {
  readonly #ecs: ECSClient;
  readonly #containerName: string;
  readonly #familyPrefix: string;
  readonly #revisions = new Map<string, Promise<string>>();

  constructor(options: {
    readonly ecs: ECSClient;
    readonly containerName: string;
    /** The per-run family prefix (default `remote-worker-run-`). */
    readonly familyPrefix?: string | undefined;
  }) {
    this.#ecs = options.ecs;
    this.#containerName = options.containerName;
    this.#familyPrefix = options.familyPrefix ?? DEFAULT_FAMILY_PREFIX;
  }

  /** The shared revision of `baseName` with `secrets` added; found or registered once per container. */
  revisionFor(baseName: string, secrets: readonly Secret[]): Promise<string> {
    const family = sharedFamily(this.#familyPrefix, baseName, this.#containerName, secrets);
    let revision = this.#revisions.get(family);
    if (revision === undefined) {
      revision = this.#findOrRegister(baseName, family, secrets);
      this.#revisions.set(family, revision);
      // A failure is not remembered: the next run tries again.
      revision.catch(() => this.#revisions.delete(family));
    }
    return revision;
  }

  async #findOrRegister(baseName: string, family: string, secrets: readonly Secret[]): Promise<string> {
    try {
      const existing = await this.#active(family);
      if (existing !== undefined) return existing;
      const base = await describeBase(this.#ecs, baseName);
      const { taskDefinition } = await this.#ecs.send(
        new RegisterTaskDefinitionCommand(withSecrets(base, baseName, this.#containerName, secrets, family)),
      );
      const arn = taskDefinition?.taskDefinitionArn;
      if (arn === undefined) throw new LauncherUnavailableError('ECS RegisterTaskDefinition returned no ARN');
      return arn;
    } catch (error) {
      throw ecsError(error, 'RegisterTaskDefinition');
    }
  }

  /** The family's latest ACTIVE revision, if it has one. */
  async #active(family: string): Promise<string | undefined> {
    try {
      const { taskDefinition } = await this.#ecs.send(
        new DescribeTaskDefinitionCommand({ taskDefinition: family }),
      );
      return taskDefinition?.status === 'ACTIVE' ? taskDefinition.taskDefinitionArn : undefined;
    } catch (error) {
      // An unknown family: ClientException "Unable to describe task definition".
      if ((error as { name?: string }).name === 'ClientException') return undefined;
      throw error;
    }
  }
}

/**
 * `<prefix>shared-<hash>`: the hash covers the base task definition, the
 * container and the secret references in a canonical order, so the same
 * content always names the same family and different content never shares
 * one. A run id (a ULID) never reads `shared-…`, so no run's own family
 * (`<prefix><runId>`) is ever one of these.
 */
export function sharedFamily(
  prefix: string,
  baseName: string,
  containerName: string,
  secrets: readonly Secret[],
): string {
  const canonical = JSON.stringify([
    baseName,
    containerName,
    [...secrets].map((s) => [s.name, s.valueFrom]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  ]);
  const hash = createHash('sha256').update(canonical).digest('hex').slice(0, HASH_CHARS);
  return `${prefix}shared-${hash}`.slice(0, FAMILY_MAX);
}
