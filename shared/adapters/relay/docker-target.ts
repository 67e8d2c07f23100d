import { dirname, isAbsolute, relative } from 'node:path';
import type { ContainerTarget } from '../../domain/container-target.ts';
import { LaunchRejectedError } from '../../domain/errors.ts';
import { CONTAINER_WORK_DIR } from '../../domain/shim-protocol.ts';
import type { TaskSpec } from '../../domain/task-spec.ts';
import type { ExecutionRequest } from '../../ports/executor.ts';

/**
 * The container the docker executor asks the shim to run the tool in
 * (`RW_CONTAINER`): its deterministic name, its labels, limits, network and
 * mounts. Nothing in it is secret: it is part of the container's
 * configuration, which `docker inspect` shows.
 *
 * @example
 * const target = containerTarget('podman', 'relay-1', { network: 'bridge' }, request, containerName(runId), mount);
 */

/** Where assets appear inside the task container (the seeds: assets are bind-mounted under /ansible/). */
export const CONTAINER_ASSET_ROOT = `${CONTAINER_WORK_DIR}/assets`;
export const MANAGED_LABEL = 'remote-worker.managed';
export const RUN_ID_LABEL = 'remote-worker.run-id';
/** Which relay started the container, so two relays (or local instances) on one engine never reap each other's. */
export const EXECUTOR_LABEL = 'remote-worker.executor';

/** Deterministic container name: a second start for the same run finds the first container instead of making another. */
export function containerName(runId: string): string {
  return `rw-${runId.toLowerCase().replace(/[^a-z0-9_.-]/g, '-')}`;
}

/** The host directory to mount for the asset, and where it appears in the container. */
export function assetMountFor(spec: TaskSpec, root: string | undefined): ContainerTarget['assetMount'] {
  if (spec.asset.kind === 'url') return undefined;
  const hostPath = spec.asset.path;
  let mount: string;
  if (root === undefined) {
    mount = dirname(hostPath);
  } else {
    const rel = relative(root, hostPath);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      throw new LaunchRejectedError(`The asset ${hostPath} is outside the asset root ${root}`);
    }
    mount = root;
  }
  if (mount.includes(':')) {
    throw new LaunchRejectedError(`Cannot bind-mount ${mount}: a ':' in the path breaks docker's -v syntax`);
  }
  return { host: mount, container: CONTAINER_ASSET_ROOT };
}

/** The `docker run` flags and the rest of the target for one run's container. */
export function containerTarget(
  bin: string,
  executorId: string,
  options: {
    readonly network?: string;
    readonly memory?: string;
    readonly cpus?: string;
    readonly user?: string;
    readonly volumes?: readonly string[];
  },
  request: ExecutionRequest,
  name: string,
  assetMount: ContainerTarget['assetMount'],
): ContainerTarget {
  return {
    bin,
    name,
    image: request.image,
    runArgs: [
      '--label',
      `${RUN_ID_LABEL}=${request.runId}`,
      '--label',
      `${MANAGED_LABEL}=true`,
      '--label',
      `${EXECUTOR_LABEL}=${executorId}`,
      '--network',
      options.network ?? 'bridge',
      '--init',
      ...(options.memory === undefined ? [] : ['--memory', options.memory]),
      ...(options.cpus === undefined ? [] : ['--cpus', options.cpus]),
      ...(options.user === undefined ? [] : ['--user', options.user]),
      ...(assetMount === undefined ? [] : ['-v', `${assetMount.host}:${assetMount.container}:ro`]),
      ...(options.volumes ?? []).flatMap((volume) => ['-v', volume]),
    ],
    ...(assetMount === undefined ? {} : { assetMount }),
  };
}
