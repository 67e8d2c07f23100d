import {
  DeregisterTaskDefinitionCommand,
  type ECSClient,
  ListTaskDefinitionsCommand,
  RegisterTaskDefinitionCommand,
  type Secret,
} from '@aws-sdk/client-ecs';
import { LauncherUnavailableError } from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import { ecsError } from './errors.ts';
import { describeBase, withSecrets } from './shared-definitions.ts';

/** Task definition family: up to 255 letters, digits, `-` and `_`. */
const FAMILY_MAX = 255;

export const RUN_ID_TAG = 'remote-worker:run-id';
export const ATTEMPT_TAG = 'remote-worker:attempt';

/**
 * The task definition revisions of one run (family `<prefix><runId>`): a copy
 * of the image's task definition whose runner container adds the run's
 * secret references, registered at launch and deregistered at cleanup (see
 * EcsLauncher). Only runs with values minted for them (per-run secrets, whose
 * ARNs no other run shares) need one; stored secrets go through the shared
 * revisions of SharedSecretDefinitions.
 *
 * @example
 * const defs = new PerRunTaskDefinitions({ ecs, containerName: 'runner' });
 * const arn = await defs.register(run, 'remote-worker-ansible-cloud', [{ name: 'RW_SECRET_0', valueFrom }]);
 * await defs.deregister(run.id);
 */
export class PerRunTaskDefinitions {
  readonly #o: {
    readonly ecs: ECSClient;
    readonly containerName: string;
    readonly familyPrefix?: string | undefined;
  };

  constructor(options: {
    readonly ecs: ECSClient;
    readonly containerName: string;
    /** Default `remote-worker-run-`. */
    readonly familyPrefix?: string | undefined;
  }) {
    this.#o = options;
  }

  /** Deregister every active revision of the run's family. */
  async deregister(runId: string): Promise<void> {
    const family = this.#family(runId);
    try {
      for (const arn of await this.#activeRevisions(family)) {
        await this.#o.ecs.send(new DeregisterTaskDefinitionCommand({ taskDefinition: arn }));
      }
    } catch (error) {
      throw ecsError(error, 'DeregisterTaskDefinition');
    }
  }

  #family(runId: string): string {
    const prefix = this.#o.familyPrefix ?? 'remote-worker-run-';
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
  async register(run: Run, baseDefinition: string, secrets: readonly Secret[]): Promise<string> {
    const family = this.#family(run.id);
    try {
      const [existing] = await this.#activeRevisions(family);
      if (existing !== undefined) return existing;

      const base = await describeBase(this.#o.ecs, baseDefinition);
      const { taskDefinition: registered } = await this.#o.ecs.send(
        new RegisterTaskDefinitionCommand({
          ...withSecrets(base, baseDefinition, this.#o.containerName, secrets, family),
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
