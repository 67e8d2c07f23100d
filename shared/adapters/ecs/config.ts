import type { ECSClient } from '@aws-sdk/client-ecs';
import type { Settings } from '../../config/settings.ts';
import type { Run } from '../../domain/run.ts';
import type { KnownForLaunch, PreparedTask } from '../../ports/launcher.ts';
import type { LogReader } from '../../ports/log-store.ts';
import type { RunSecrets } from '../secrets-manager/run-secrets.ts';

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
   * may reach a RunTask request (see the class comment). `known` is what
   * dispatch already read (the target), so preparation does not read it again.
   */
  readonly prepare: (run: Run, known?: KnownForLaunch) => Promise<PreparedTask>;
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
