import type { protos } from '@google-cloud/run';
import { LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import type { BackendStatus, Launcher, LaunchRequest } from '../../ports/launcher.ts';
import type { LogPage } from '../../ports/log-store.ts';
import type { CloudRunLauncherOptions } from './config.ts';
import { EphemeralSecrets } from './ephemeral-secrets.ts';
import { googleError, isAlreadyExists, isNotFound, isTransient } from './errors.ts';
import { executionStatus, isCancelled, isFinished, type TaskFacts, taskFacts } from './execution-status.ts';
import { retrying, retryPause } from './google-http.ts';
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
} from './handle.ts';
import { jobEnvironment, jobFor } from './job.ts';
import { CloudRunLogs } from './logging.ts';

type Job = protos.google.cloud.run.v2.IJob;
type Execution = protos.google.cloud.run.v2.IExecution;
type EnvVar = protos.google.cloud.run.v2.IEnvVar;

const SERVICE = 'Cloud Run';

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
    const env = await jobEnvironment(run, jobId, prepared, async (secretId, value, labels, ttl) => {
      try {
        await this.#secrets.put(secretId, value, labels, ttl);
      } catch (error) {
        throw await this.#abandon(run, error, 'CreateSecret');
      }
    });
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
        await retryPause(attempt, this.#o.retry);
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
    const job = jobFor(this.#o, run, jobId, image, env);
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
