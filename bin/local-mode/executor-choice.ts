import { createHash } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { dockerAvailable } from '../../shared/adapters/relay/docker-cli.ts';
import { DockerExecutor } from '../../shared/adapters/relay/docker-executor.ts';
import { ProcessExecutor } from '../../shared/adapters/relay/process-executor.ts';
import type { Settings } from '../../shared/config/settings.ts';
import { troubleMessage } from '../../shared/domain/troubleshooting.ts';
import type { Executor } from '../../shared/ports/executor.ts';

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(command: string, path = process.env.PATH ?? ''): boolean {
  return path.split(delimiter).some((dir) => isExecutable(join(dir, command)));
}

export interface ExecutorChoice {
  readonly executor?: Executor;
  /** Why there is none: relay runs are refused with this. */
  readonly reason?: string;
}

/**
 * `auto`: a sibling container when a Docker engine answers, else ansible-playbook
 * on this host. The executor id is derived from the data directory so two local
 * instances on one host never reap each other's tasks.
 */
export async function chooseExecutor(
  mode: Settings['local_executor'],
  options: {
    readonly dataDir: string;
    readonly assetRoot: string;
    /** `local_docker_cli`. Default `docker`. */
    readonly dockerCli?: string;
    /** `local_docker_volumes`. */
    readonly dockerVolumes?: readonly string[];
  },
): Promise<ExecutorChoice> {
  const executorId = `local-${createHash('sha256').update(options.dataDir).digest('hex').slice(0, 12)}`;
  if (mode !== 'process') {
    const bin = options.dockerCli ?? 'docker';
    if (await dockerAvailable(bin)) {
      return {
        executor: new DockerExecutor({
          bin,
          assetRoot: options.assetRoot,
          executorId,
          ...(options.dockerVolumes === undefined ? {} : { volumes: options.dockerVolumes }),
        }),
      };
    }
    if (mode === 'docker') {
      // No CLI at all is the seeds' "docker: command not found": say it in their words, with their fix.
      const missing = bin.includes('/') ? !isExecutable(bin) : !onPath(bin);
      return {
        reason: missing
          ? `LOCAL_EXECUTOR is docker but ${bin}: command not found. ${troubleMessage('docker_missing', { kind: 'vm' })}`
          : `LOCAL_EXECUTOR is docker but no Docker engine answers through ${bin}`,
      };
    }
  }
  if (!onPath('ansible-playbook')) {
    return {
      reason:
        'no Docker engine answers and ansible-playbook is not on PATH (npm start installs it: bin/prerequisites.ts)',
    };
  }
  return { executor: new ProcessExecutor({ executorId }) };
}
