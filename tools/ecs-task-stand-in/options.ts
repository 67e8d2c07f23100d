import { fileURLToPath } from 'node:url';
import type { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import type { ECSClient } from '@aws-sdk/client-ecs';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { EcsTaskStateChangeEvent } from '../../shared/adapters/ecs/task-event.ts';
import type { Logger } from '../../shared/ports/logger.ts';

export interface EcsTaskStandInOptions {
  readonly ecs: ECSClient;
  readonly secretsManager: SecretsManagerClient;
  readonly logs: CloudWatchLogsClient;
  /** The cluster to watch (name or ARN). */
  readonly cluster: string;
  readonly region: string;
  /**
   * Where each "ECS Task State Change" goes: the status-sync handler, as the
   * EventBridge rule would invoke it. A rejection is retried, as EventBridge does.
   */
  readonly deliver: (event: EcsTaskStateChangeEvent) => Promise<unknown>;
  /**
   * moto's endpoint: its tasks are frozen at RUNNING through the state manager
   * (moto otherwise moves a task one step towards STOPPED on every
   * DescribeTasks, with no exit code), so what DescribeTasks says is what the
   * stand-in made happen. Leave unset for an emulator without that API.
   */
  readonly motoEndpoint?: string;
  /**
   * The command an image's ENTRYPOINT runs. Every runner image's is the task
   * shim (`node /opt/remote-worker/shim.mjs`), so the default runs
   * runners/shim/main.ts through tsx for any image.
   */
  readonly entrypoint?: (image: string) => readonly string[];
  /**
   * What the process needs that an image would carry (PATH for node and
   * ansible-playbook, HOME). Default: PATH, HOME, LANG and TMPDIR of this
   * process; nothing else of this process's environment (AWS credentials
   * among it) reaches a task, as nothing of the host reaches a container.
   */
  readonly hostEnv?: Readonly<Record<string, string>>;
  /** How often the cluster is listed (default 250 ms). */
  readonly pollMs?: number;
  /**
   * Upper bound on the container's `stopTimeout` (SIGTERM to SIGKILL after a
   * StopTask; ECS's default is 30 s, the runner task definitions ask for 120).
   */
  readonly maxStopTimeoutSeconds?: number;
  readonly logger?: Logger;
}

/** The runner images' ENTRYPOINT, the task shim, as this host runs it: runners/shim/main.ts through tsx. */
export const shimEntrypoint = (): readonly string[] => [
  process.execPath,
  '--import',
  import.meta.resolve('tsx'),
  fileURLToPath(new URL('../../runners/shim/main.ts', import.meta.url)),
];

/** PATH, HOME, LANG and TMPDIR of this process: what an image would carry, and nothing else of this host. */
export function defaultHostEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG', 'TMPDIR']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}
