import type { ExecutionsClient, JobsClient, protos, TasksClient } from '@google-cloud/run';
import type { PreparedTask } from '../../app/task-prep.ts';
import type { Settings } from '../../config/settings.ts';
import { isEnvName } from '../../domain/env-name.ts';
import {
  LauncherUnavailableError,
  LaunchRejectedError,
  RunnerNotConfiguredError,
} from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import type { BackendStatus, Launcher, LaunchRequest } from '../../ports/launcher.ts';
import type { LogPage } from '../../ports/log-store.ts';
import { EphemeralSecrets } from './ephemeral-secrets.ts';
import { googleError, isAlreadyExists, isNotFound, isTransient } from './errors.ts';
import { executionStatus, isCancelled, isFinished, type TaskFacts, taskFacts } from './execution-status.ts';
import type { AuthorizedHttp, RetryTuning } from './google-http.ts';
import { retrying } from './google-http.ts';
import {
  type CloudRunHandle,
  checkJobPrefix,
  cloudRunJobId,
  executionName,
  formatCloudRunHandle,
  JOB_LABEL,
  jobName,
  jobParent,
  parseCloudRunHandle,
  parseExecutionName,
  runLabels,
} from './handle.ts';
import { CloudRunLogs } from './logging.ts';

type Job = protos.google.cloud.run.v2.IJob;
type Execution = protos.google.cloud.run.v2.IExecution;
type EnvVar = protos.google.cloud.run.v2.IEnvVar;

const SERVICE = 'Cloud Run';
/** A literal env value may hold at most 32,768 bytes (Cloud Run EnvVar.value). */
export const CLOUD_RUN_ENV_VALUE_MAX_BYTES = 32_768;
/** Cloud Run's ceiling on a task's timeout: 7 days. */
const TASK_TIMEOUT_MAX_SECONDS = 604_800;
/** How long a per-run secret outlives the run's timeout before Secret Manager deletes it by itself. */
const SECRET_TTL_MARGIN_SECONDS = 86_400;
/** Secret Manager secret ids: at most 255 characters. */
const SECRET_ID_MAX = 255;
/** Env names the container may receive (POSIX-ish, as Cloud Run accepts them). */

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

/**
 * The `gcp` runner: one Cloud Run job per run and attempt, run once.
 *
 * Idempotency. RunJob has no request id and each call starts another
 * execution, so the job itself is the key: its id is deterministic from the
 * run id and attempt (CreateJob answering 409 means an earlier delivery made
 * it), and its `latestCreatedExecution` is read before RunJob is ever called.
 * An execution found there is adopted, whatever its state, so a redelivery or
 * a late duplicate after the run finished never starts a second one. RunJob
 * itself is never blindly retried: after a failed or unanswered RunJob the
 * job is read again, and only a job that still has no execution (and an
 * `executionCount` of 0) is run again. Concurrent launches of the same
 * attempt cannot happen: the dispatcher's conditional claim serialises them.
 * Each task gets `maxRetries: 0` (Cloud Run's default of 3 would play the
 * same play again after a failure) and `taskCount: 1`.
 *
 * The job is per run, so its template carries everything the task needs (the
 * `RW_TASK` spec and `RW_RUN_ID` as plain env); RunJob needs no overrides.
 *
 * Secrets travel only as Secret Manager references (`valueSource.secretKeyRef`,
 * version `latest`): a stored secret bound to the run is referenced by its own
 * name (`PreparedTask.secretRefs`), and material minted for this run (in
 * `secretEnv` but not `secretRefs`) is written to a per-run secret first,
 * labelled with the job id and given a TTL. No value is ever in a job or
 * execution request; `cleanup` deletes the job (and with it its executions)
 * and the per-run secrets.
 *
 * Logs come from Cloud Logging, which keeps them after the job is deleted, so
 * no archive is needed (see CloudRunLogs).
 *
 * @example
 * const auth = new GoogleAuth({ scopes: 'https://www.googleapis.com/auth/cloud-platform' });
 * const launcher = new CloudRunLauncher({
 *   ...cloudRunOptionsFromSettings(settings),
 *   jobs: new v2.JobsClient({ fallback: true, auth }),
 *   executions: new v2.ExecutionsClient({ fallback: true, auth }),
 *   tasks: new v2.TasksClient({ fallback: true, auth }),
 *   http: auth,
 *   prepare: (run) => prepareTask({ store, assets, secrets }, run, { resolveSecrets: false }),
 * });
 * const handle = await launcher.launch({ run, image: 'chrweav/ansible-cloud' });
 * // 'gcp:my-project/europe-west1/rw-01jd…-a1/rw-01jd…-a1-x7k2p'
 */
export class CloudRunLauncher implements Launcher {
  readonly backend = 'gcp' as const;
  readonly #o: CloudRunLauncherOptions;
  readonly #prefix: string;
  readonly #secrets: EphemeralSecrets;
  readonly #logs: CloudRunLogs;

  constructor(options: CloudRunLauncherOptions) {
    this.#prefix = options.jobIdPrefix ?? 'rw';
    checkJobPrefix(this.#prefix);
    this.#o = options;
    this.#secrets = new EphemeralSecrets({
      http: options.http,
      project: options.project,
      ...(options.secretManagerEndpoint === undefined ? {} : { endpoint: options.secretManagerEndpoint }),
      ...(options.secretReplicationLocations === undefined
        ? {}
        : { replicationLocations: options.secretReplicationLocations }),
      ...(options.retry === undefined ? {} : { retry: options.retry }),
    });
    this.#logs = new CloudRunLogs({
      http: options.http,
      ...(options.loggingEndpoint === undefined ? {} : { endpoint: options.loggingEndpoint }),
      ...(options.logPageSize === undefined ? {} : { pageSize: options.logPageSize }),
      ...(options.retry === undefined ? {} : { retry: options.retry }),
    });
  }

  async launch({ run, image }: LaunchRequest): Promise<string> {
    const jobId = this.#jobId(run);
    const name = jobName(this.#o.project, this.#o.region, jobId);

    // Adopt before anything else: a job of this attempt that has run is never run again.
    const existing = await this.#getJob(name);
    const adopted = this.#executionOf(existing, jobId);
    if (adopted !== undefined) return adopted;

    const prepared = await this.#o.prepare(run);
    const env = await this.#environment(run, jobId, prepared);
    try {
      if (existing === undefined) await this.#createJob(run, jobId, image, env);
    } catch (error) {
      throw await this.#abandon(run, error, 'CreateJob');
    }
    return this.#runOnce(name, jobId);
  }

  async status(handle: string, _run?: Run): Promise<BackendStatus> {
    const h = this.#parse(handle);
    const name = executionName(h);
    let execution: Execution;
    try {
      [execution] = await retrying(() => this.#o.executions.getExecution({ name }), this.#o.retry);
    } catch (error) {
      if (isNotFound(error)) {
        return {
          state: 'missing',
          reason: `Cloud Run no longer knows execution ${h.executionId} of job ${h.jobId} (the job was deleted)`,
        };
      }
      throw googleError(error, SERVICE, 'GetExecution');
    }
    const status = executionStatus(execution);
    // A failure without an exit code: the failed task's last attempt has it.
    if (status.state !== 'exited' || status.exitCode !== undefined || isCancelled(execution)) return status;
    const facts = await this.#taskFacts(name);
    return facts === undefined ? status : executionStatus(execution, facts);
  }

  logs(handle: string, run: Run, cursor?: string, limit?: number): Promise<LogPage> {
    return this.#logs.read(this.#parse(handle), run.createdAt, cursor, limit);
  }

  /**
   * CancelExecution. Cloud Run stops the task with SIGTERM and, about ten
   * seconds later, SIGKILL; the grace is Cloud Run's, so `graceSeconds` is not
   * used. The operation is not awaited: it ends when the execution does. An
   * execution that is gone or already finished needs no cancel.
   */
  async cancel(handle: string, _run: Run, _graceSeconds: number): Promise<void> {
    const name = executionName(this.#parse(handle));
    try {
      await retrying(() => this.#o.executions.cancelExecution({ name }), this.#o.retry);
    } catch (error) {
      if (isNotFound(error)) return;
      if (!isTransient(error)) {
        // Refused: typically FAILED_PRECONDITION because it already finished. Check rather than guess.
        const finished = await retrying(() => this.#o.executions.getExecution({ name }), this.#o.retry).then(
          ([execution]) => isFinished(execution),
          (readError: unknown) => isNotFound(readError),
        );
        if (finished) return;
      }
      throw googleError(error, SERVICE, 'CancelExecution');
    }
  }

  /**
   * Deletes the run's job (which deletes its executions) and its per-run
   * secrets, found by label so that even a launch that never recorded a
   * handle leaves nothing behind. Anything already gone is fine; safe to
   * call again. Cloud Logging keeps the output.
   */
  async cleanup(handle: string, run: Run): Promise<void> {
    const h = parseCloudRunHandle(handle);
    const project = h?.project ?? this.#o.project;
    const region = h?.region ?? this.#o.region;
    const jobId = h?.jobId ?? this.#jobId(run);
    const failures: unknown[] = [];
    try {
      await retrying(() => this.#o.jobs.deleteJob({ name: jobName(project, region, jobId) }), this.#o.retry);
    } catch (error) {
      if (!isNotFound(error)) failures.push(googleError(error, SERVICE, 'DeleteJob'));
    }
    try {
      for (const secretId of await this.#secrets.listByLabel(JOB_LABEL, jobId)) {
        await this.#secrets.delete(secretId);
      }
    } catch (error) {
      failures.push(error);
    }
    if (failures.length > 0) throw failures[0];
  }

  #jobId(run: Run): string {
    try {
      return cloudRunJobId({ runId: run.id, attempt: run.attempt }, this.#prefix);
    } catch (error) {
      throw new LaunchRejectedError(
        `Run ${run.id} cannot be named as a Cloud Run job: ${(error as Error).message}`,
      );
    }
  }

  #parse(handle: string): CloudRunHandle {
    const h = parseCloudRunHandle(handle);
    if (h === undefined) throw new LaunchRejectedError(`Not a Cloud Run launch handle: ${handle}`);
    return h;
  }

  /** The job, or undefined when Cloud Run does not know it. */
  async #getJob(name: string): Promise<Job | undefined> {
    try {
      const [job] = await retrying(() => this.#o.jobs.getJob({ name }), this.#o.retry);
      return job;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw googleError(error, SERVICE, 'GetJob');
    }
  }

  /**
   * The handle of the job's execution, if it has one. A job that counts an
   * execution it does not name yet is not run again either: that would be
   * the second execution this guard exists to prevent.
   */
  #executionOf(job: Job | undefined, jobId: string): string | undefined {
    if (job === undefined) return undefined;
    const parsed = parseExecutionName(job.latestCreatedExecution?.name);
    if (parsed !== undefined) return formatCloudRunHandle(parsed);
    const shortName = job.latestCreatedExecution?.name;
    if (shortName !== undefined && shortName !== null && shortName !== '' && !shortName.includes('/')) {
      return formatCloudRunHandle({
        project: this.#o.project,
        region: this.#o.region,
        jobId,
        executionId: shortName,
      });
    }
    if (Number(job.executionCount ?? 0) > 0) {
      throw new LauncherUnavailableError(
        `Cloud Run job ${jobId} has an execution that it does not name yet; will look again`,
      );
    }
    return undefined;
  }

  /**
   * RunJob at most once per job. Every try starts by reading the job: an
   * execution there (from an earlier try whose answer was lost, or an earlier
   * delivery) is adopted. Only a job with no execution is run.
   */
  async #runOnce(name: string, jobId: string): Promise<string> {
    const attempts = Math.max(1, this.#o.retry?.attempts ?? 4);
    let lastError: unknown;
    for (let attempt = 1; ; attempt += 1) {
      const job = await this.#getJob(name);
      if (job === undefined) {
        throw new LauncherUnavailableError(
          `Cloud Run job ${jobId} disappeared before it was run; will retry`,
        );
      }
      const adopted = this.#executionOf(job, jobId);
      if (adopted !== undefined) return adopted;
      if (lastError !== undefined && attempt > attempts) throw googleError(lastError, SERVICE, 'RunJob');
      try {
        const [operation] = await this.#o.jobs.runJob({ name });
        // RunJob's operation carries the Execution as metadata; it completes only when the execution does.
        const fromOperation = parseExecutionName((operation.metadata as Execution | null)?.name);
        if (fromOperation !== undefined) return formatCloudRunHandle(fromOperation);
        const after = this.#executionOf(await this.#getJob(name), jobId);
        if (after !== undefined) return after;
        throw new LauncherUnavailableError(
          `Cloud Run RunJob for ${jobId} answered without naming the execution`,
        );
      } catch (error) {
        if (!isTransient(error)) throw googleError(error, SERVICE, 'RunJob');
        lastError = error;
        await sleepBefore(attempt, this.#o.retry);
      }
    }
  }

  /** A launch refused for good settles the run without a handle: remove what it created now. */
  async #abandon(run: Run, error: unknown, action: string): Promise<Error> {
    const mapped = googleError(error, SERVICE, action);
    if (mapped instanceof LaunchRejectedError) await this.cleanup('', run).catch(() => {});
    return mapped;
  }

  async #createJob(run: Run, jobId: string, image: string, env: EnvVar[]): Promise<void> {
    const labels = runLabels({ runId: run.id, attempt: run.attempt }, jobId);
    const timeout = Math.min(Math.max(1, Math.ceil(run.timeoutSeconds)), TASK_TIMEOUT_MAX_SECONDS);
    const connector = this.#connector();
    const job: Job = {
      labels,
      template: {
        labels,
        taskCount: 1,
        template: {
          containers: [
            {
              name: 'runner',
              image,
              env,
              ...(this.#o.resources === undefined ? {} : { resources: { limits: { ...this.#o.resources } } }),
            },
          ],
          maxRetries: 0,
          timeout: { seconds: timeout },
          ...(this.#o.serviceAccount === undefined ? {} : { serviceAccount: this.#o.serviceAccount }),
          ...(connector === undefined ? {} : { vpcAccess: { connector, egress: 'PRIVATE_RANGES_ONLY' } }),
        },
      },
    };
    try {
      const [operation] = await retrying(
        () => this.#o.jobs.createJob({ parent: jobParent(this.#o.project, this.#o.region), jobId, job }),
        this.#o.retry,
      );
      await operation.promise();
    } catch (error) {
      // An earlier delivery (or a try whose answer was lost) created it: the same job.
      if (isAlreadyExists(error)) return;
      throw error;
    }
  }

  #connector(): string | undefined {
    const c = this.#o.vpcConnector;
    if (c === undefined) return undefined;
    return c.includes('/') ? c : `projects/${this.#o.project}/locations/${this.#o.region}/connectors/${c}`;
  }

  /**
   * The container's env: the spec and run id as plain values, every secret
   * as a Secret Manager reference. Minted material is written to per-run
   * secrets here, before the job that references them exists.
   */
  async #environment(run: Run, jobId: string, prepared: PreparedTask): Promise<EnvVar[]> {
    const spec = JSON.stringify(prepared.spec);
    const size = Buffer.byteLength(spec, 'utf8');
    if (size > CLOUD_RUN_ENV_VALUE_MAX_BYTES) {
      throw new LaunchRejectedError(
        `task spec too large for a Cloud Run env value (${size} bytes > ${CLOUD_RUN_ENV_VALUE_MAX_BYTES}); move extra vars to a file asset`,
      );
    }
    const named = new Set<string>([
      ...prepared.spec.secretVars.map((s) => s.env),
      ...(prepared.spec.secretEnvNames ?? []),
      ...(prepared.spec.sshKeyEnv === undefined ? [] : [prepared.spec.sshKeyEnv]),
      ...Object.keys(prepared.secretRefs),
      ...Object.keys(prepared.secretEnv),
    ]);
    const env: EnvVar[] = [
      { name: 'RW_TASK', value: spec },
      { name: 'RW_RUN_ID', value: run.id },
    ];
    const labels = runLabels({ runId: run.id, attempt: run.attempt }, jobId);
    const ttl = Math.min(run.timeoutSeconds, TASK_TIMEOUT_MAX_SECONDS) + SECRET_TTL_MARGIN_SECONDS;
    for (const envName of [...named].sort()) {
      if (!isEnvName(envName) || envName === 'RW_TASK' || envName === 'RW_RUN_ID') {
        throw new LaunchRejectedError(`Secret env name ${envName} cannot be used in a Cloud Run container`);
      }
      const ref = prepared.secretRefs[envName];
      if (ref !== undefined) {
        env.push({ name: envName, valueSource: { secretKeyRef: secretKeyRef(ref) } });
        continue;
      }
      const value = prepared.secretEnv[envName];
      if (value === undefined) {
        throw new LaunchRejectedError(
          `The task spec names secret env ${envName}, but neither a stored secret nor a value was prepared for it`,
        );
      }
      const secretId = `${jobId}-${envName}`;
      if (secretId.length > SECRET_ID_MAX) {
        throw new LaunchRejectedError(
          `Secret env name ${envName} is too long for a Secret Manager secret id`,
        );
      }
      try {
        await this.#secrets.put(secretId, value, labels, ttl);
      } catch (error) {
        throw await this.#abandon(run, error, 'CreateSecret');
      }
      env.push({ name: envName, valueSource: { secretKeyRef: { secret: secretId, version: 'latest' } } });
    }
    return env;
  }

  /** Exit code and words of the failed task; undefined without a TasksClient or when the tasks are gone. */
  async #taskFacts(execution: string): Promise<TaskFacts | undefined> {
    const tasks = this.#o.tasks;
    if (tasks === undefined) return undefined;
    try {
      const [list] = await retrying(() => tasks.listTasks({ parent: execution }), this.#o.retry);
      return taskFacts(list);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw googleError(error, SERVICE, 'ListTasks');
    }
  }
}

/**
 * `projects/p/secrets/s/versions/3` → that secret and version; a bare name or
 * `projects/p/secrets/s` → its `latest` version.
 */
function secretKeyRef(ref: string): { secret: string; version: string } {
  const m = /^(projects\/[^/]+\/secrets\/[^/]+)\/versions\/([^/]+)$/.exec(ref);
  return m === null ? { secret: ref, version: 'latest' } : { secret: m[1]!, version: m[2]! };
}

/** The backoff `retrying` would use, for the one call that must not go through it (RunJob). */
function sleepBefore(attempt: number, tuning: RetryTuning | undefined): Promise<void> {
  const base = tuning?.baseMs ?? 200;
  const max = tuning?.maxMs ?? 5000;
  const ms = Math.min(max, base * 2 ** (attempt - 1)) * Math.random();
  return (tuning?.sleep ?? ((t: number) => new Promise<void>((resolve) => setTimeout(resolve, t))))(ms);
}
