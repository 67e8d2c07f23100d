import type { Run, Runner } from '../domain/run.ts';
import type { Target } from '../domain/target.ts';
import type { TaskSpec } from '../domain/task.ts';
import type { LogPage } from './log-store.ts';

/**
 * Starts one run on one backend (Prefect's worker shape). `launch` must be
 * idempotent for the same run and attempt: on redelivery it adopts what an
 * earlier call created instead of starting a second task.
 *
 * @example
 * const handle = await launchers.ecs.launch({ run, image });
 * const status = await launchers.ecs.status(handle);
 */
export interface LaunchRequest {
  readonly run: Run;
  readonly image: string;
  /**
   * The run was already `dispatching` when this delivery claimed it (an earlier
   * attempt may have started a task): look for that task before starting one.
   * False or absent on a first delivery, where there is nothing to adopt.
   * Absent means "unknown": a launcher then looks, to be safe.
   */
  readonly redelivery?: boolean;
  /** What dispatch already read for this run, so task preparation does not read it again. */
  readonly known?: KnownForLaunch;
}

/** Reads dispatch made that task preparation would otherwise repeat. */
export interface KnownForLaunch {
  /** The run's target as dispatch read it (undefined: the run has none). */
  readonly target: Target | undefined;
}

/** How a launcher asks task preparation for a run (shared/app/task-prep.ts `prepareTask`). */
export interface PrepareOptions {
  /** `false` for backends that fetch secrets themselves (ECS task-definition `secrets`). */
  readonly resolveSecrets?: boolean;
  readonly known?: KnownForLaunch;
}

/** What a launcher names a run's backend resources by: the run and its attempt (each attempt is a new task). */
export interface RunAttempt {
  readonly runId: string;
  readonly attempt: number;
}

export type BackendStatus =
  | { readonly state: 'pending' | 'running' }
  | { readonly state: 'exited'; readonly exitCode?: number; readonly reason?: string }
  /** The backend does not report status to the dispatcher (the relay writes the run itself). */
  | { readonly state: 'self_reporting' }
  | { readonly state: 'missing'; readonly reason: string };

export interface Launcher {
  readonly backend: Runner;
  /** Returns the opaque handle to store on the run (`relay:<queue>`, `ecs:<cluster>/<taskArn>` …). */
  launch(request: LaunchRequest): Promise<string>;
  status(handle: string, run: Run): Promise<BackendStatus>;
  /** At most `limit` lines after `cursor`, under the same cap as every LogReader (LOG_PAGE_MAX_LINES). */
  logs(handle: string, run: Run, cursor?: string, limit?: number): Promise<LogPage>;
  /** Ask the backend to stop the task, giving it `graceSeconds` to exit cleanly. */
  cancel(handle: string, run: Run, graceSeconds: number): Promise<void>;
  /** Remove whatever the run left behind on the backend. */
  cleanup(handle: string, run: Run): Promise<void>;
}

export type Launchers = Partial<Record<Runner, Launcher>>;

/** What task preparation hands a launcher: the secret-free spec and, apart, the values only the task's environment gets. */
export interface PreparedTask {
  readonly spec: TaskSpec;
  /**
   * Env name (`RW_SECRET_<n>`, `KUBECONFIG` …) → value: for the task's
   * ephemeral environment only. Holds every secret env the spec names, except
   * stored secrets when `resolveSecrets: false`.
   */
  readonly secretEnv: Readonly<Record<string, string>>;
  /**
   * Env name → name of the stored secret its value comes from, for backends
   * that resolve references themselves (ECS `valueFrom`, Cloud Run Secret
   * Manager). An env the spec names but this map lacks is material minted for
   * this run (a token-prepared kubeconfig, a checked-out password): its value
   * is only in `secretEnv`.
   */
  readonly secretRefs: Readonly<Record<string, string>>;
}
