import type { ExecutionsClient, JobsClient, TasksClient } from '@google-cloud/run';
import type { Settings } from '../../config/settings.ts';
import { RunnerNotConfiguredError } from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import type { PreparedTask } from '../../ports/launcher.ts';
import type { AuthorizedHttp, RetryTuning } from './google-http.ts';

/** What the Cloud Run runner needs from the operator's settings. */
export interface CloudRunSettings {
  readonly project: string;
  readonly region: string;
  /** `projects/<p>/locations/<r>/connectors/<name>`; a bare name is expanded in the run's project and region. */
  readonly vpcConnector?: string;
}

/**
 * `gcp_project_id`, `gcp_ansible_cloud_run_region` (else `gcp_region`) and
 * `gcp_ansible_vpc_connector`. Throws RunnerNotConfiguredError with the
 * seeds' message, naming every missing key, when the project or a region is
 * not set (the same rule as runner resolution's refusal).
 *
 * @example
 * cloudRunOptionsFromSettings({ gcp_project_id: 'p', gcp_region: 'europe-west1' }) // { project: 'p', region: 'europe-west1' }
 * cloudRunOptionsFromSettings({ gcp_region: 'europe-west1' }) // throws "Ansible Cloud Run runner is not configured: set gcp_project_id"
 */
export function cloudRunOptionsFromSettings(
  settings: Pick<
    Settings,
    'gcp_project_id' | 'gcp_region' | 'gcp_ansible_cloud_run_region' | 'gcp_ansible_vpc_connector'
  >,
  family: 'Ansible' | 'Kubernetes' = 'Ansible',
): CloudRunSettings {
  const set = (value: string | undefined): string | undefined =>
    value === undefined || value.trim() === '' ? undefined : value.trim();
  const project = set(settings.gcp_project_id);
  const region = set(settings.gcp_ansible_cloud_run_region) ?? set(settings.gcp_region);
  const missing = [
    ...(project === undefined ? ['gcp_project_id'] : []),
    ...(region === undefined ? ['gcp_region'] : []),
  ];
  if (project === undefined || region === undefined) {
    throw new RunnerNotConfiguredError(
      `${family} Cloud Run runner is not configured: set ${missing.join(', ')}`,
      missing,
    );
  }
  const connector = set(settings.gcp_ansible_vpc_connector);
  return { project, region, ...(connector === undefined ? {} : { vpcConnector: connector }) };
}

export interface CloudRunLauncherOptions extends CloudRunSettings {
  readonly jobs: JobsClient;
  readonly executions: ExecutionsClient;
  /** To read a failed task's exit code (`lastAttemptResult.exitCode`); without it a failure has a reason only. */
  readonly tasks?: TasksClient;
  /** Authorised requests for Cloud Logging and Secret Manager: the Cloud Run clients' own `authClient` fits. */
  readonly http: AuthorizedHttp;
  /**
   * The run's TaskSpec and secret material (shared/app/task-prep.ts
   * `prepareTask`, with `resolveSecrets: false`: Cloud Run resolves stored
   * secrets itself, so only minted material reaches `secretEnv`).
   */
  readonly prepare: (run: Run) => Promise<PreparedTask>;
  /** The task's identity; the project's default compute service account when absent. */
  readonly serviceAccount?: string;
  /** Container resource limits (`{ cpu: '1', memory: '1Gi' }`); Cloud Run's defaults when absent. */
  readonly resources?: Readonly<Record<string, string>>;
  /** Job id prefix, default `rw` (a reconciler lists leftovers by it and by the `remote_worker_job` label). */
  readonly jobIdPrefix?: string;
  /** Default `https://logging.googleapis.com`. */
  readonly loggingEndpoint?: string;
  /** Default `https://secretmanager.googleapis.com`. */
  readonly secretManagerEndpoint?: string;
  /** User-managed replication for per-run secrets, where automatic replication is forbidden. */
  readonly secretReplicationLocations?: readonly string[];
  /** entries:list page size when a reader asks for no `limit`; default LOG_PAGE_DEFAULT_LINES. */
  readonly logPageSize?: number;
  /** Backoff for 429/5xx; nothing in the SDK over REST retries them. */
  readonly retry?: RetryTuning;
}
