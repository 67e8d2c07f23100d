import type { ContainerGroup, EnvironmentVariable } from '@azure/arm-containerinstance';
import { LaunchRejectedError } from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import type { PreparedTask } from '../../ports/launcher.ts';
import type { AciLauncherOptions } from './config.ts';

export const RUN_ID_TAG = 'remote-worker:run-id';
export const ATTEMPT_TAG = 'remote-worker:attempt';

/** Environment the launcher sets itself; a secret env of the same name would silently replace it. */
const RESERVED_ENV = new Set(['RW_TASK', 'RW_RUN_ID']);

/**
 * The container group of one run and attempt: one Linux container named
 * `container`, `restartPolicy: Never`, the secret-free spec and run id as
 * plain env, every secret env as a `secureValue` (which ARM never returns),
 * and the registry password only in `imageRegistryCredentials`.
 *
 * @example
 * const group = containerGroupFor(options, 'runner', run, 'chrweav/ansible-cloud', prepared, undefined);
 */
export function containerGroupFor(
  options: Pick<AciLauncherOptions, 'location' | 'subnetIds' | 'registry' | 'cpu' | 'memoryInGB'>,
  container: string,
  run: Run,
  image: string,
  prepared: PreparedTask,
  password: string | undefined,
): ContainerGroup {
  const clash = Object.keys(prepared.secretEnv).filter((name) => RESERVED_ENV.has(name));
  if (clash.length > 0) {
    throw new LaunchRejectedError(`Secret environment ${clash.join(', ')} would replace the launcher's own`);
  }
  const environmentVariables: EnvironmentVariable[] = [
    { name: 'RW_TASK', value: JSON.stringify(prepared.spec) },
    { name: 'RW_RUN_ID', value: run.id },
    ...Object.entries(prepared.secretEnv).map(([name, secureValue]) => ({ name, secureValue })),
  ];
  const subnets = options.subnetIds ?? [];
  const registry = options.registry;
  return {
    location: options.location,
    tags: { [RUN_ID_TAG]: run.id, [ATTEMPT_TAG]: String(run.attempt) },
    osType: 'Linux',
    restartPolicy: 'Never',
    containers: [
      {
        name: container,
        image,
        resources: { requests: { cpu: options.cpu ?? 1, memoryInGB: options.memoryInGB ?? 2 } },
        environmentVariables,
      },
    ],
    ...(subnets.length === 0 ? {} : { subnetIds: subnets.map((id) => ({ id })) }),
    ...(registry === undefined || password === undefined
      ? {}
      : { imageRegistryCredentials: [{ server: registry.server, username: registry.username, password }] }),
  };
}
