import type { ChildProcess } from 'node:child_process';
import {
  type ContainerDefinition,
  DescribeTaskDefinitionCommand,
  StopTaskCommand,
  type Task,
} from '@aws-sdk/client-ecs';
import { sleep } from '../../shared/lib/sleep.ts';
import { awslogsStreamFor } from './awslogs.ts';
import { describeTasks, listTaskArns } from './cluster.ts';
import { containerEnvironment, SecretFetchError } from './container-env.ts';
import { startContainerProcess } from './container-process.ts';
import { deliverWithRetries } from './delivery.ts';
import { freezeMotoTasks } from './moto.ts';
import { defaultHostEnv, type EcsTaskStandInOptions, shimEntrypoint } from './options.ts';
import { killTree } from './process-tree.ts';
import { type TaskChange, type TaskOutcome, taskStateChangeEvent } from './task-event.ts';

export type { EcsTaskStandInOptions } from './options.ts';
export type { TaskOutcome } from './task-event.ts';

const DEFAULT_STOP_TIMEOUT_SECONDS = 30;
const ESSENTIAL_EXITED = 'Essential container in task exited';

type Phase = 'starting' | 'running' | 'stopping' | 'stopped';

interface Tracked {
  readonly arn: string;
  phase: Phase;
  version: number;
  task: Task;
  containerName: string;
  child?: ChildProcess;
  /** Set when StopTask came from outside: the reason ECS was given. */
  stopRequested?: string;
  outcome?: TaskOutcome;
  /** Events of one task are delivered one after another, in version order. */
  deliveries: Promise<void>;
  done: Promise<TaskOutcome>;
  finish: (outcome: TaskOutcome) => void;
}

/**
 * An ECS task stand-in for emulators, which record tasks and run nothing
 * (moto: shared/NOTES.md). It watches one cluster and, for each task RunTask
 * created after it started, does what the ECS agent and Fargate would:
 *
 * - reads the task definition's container (the one the overrides name, else
 *   the first), builds its environment (definition `environment`, override
 *   `environment`, `secrets` fetched from Secrets Manager by `valueFrom`; a
 *   secret it cannot fetch fails the task before start, `TaskFailedToStart`);
 * - runs the image's entrypoint as a local process (the task shim) with that
 *   environment and the override's `command`, in its own working directory;
 * - ships stdout and stderr, line by line, to CloudWatch Logs under the
 *   awslogs stream name `<awslogs-stream-prefix>/<container>/<task id>`;
 * - on StopTask (seen as `desiredStatus: STOPPED`), sends SIGTERM and, after
 *   the container's `stopTimeout`, SIGKILL to everything the process started;
 * - records the exit code (128 + n after signal n, as Docker reports it) and
 *   the stop code and reason, and emits "ECS Task State Change" events with
 *   increasing `detail.version` (PROVISIONING, RUNNING, STOPPED) to `deliver`;
 * - after the STOPPED event, stops the task in the emulator too, so
 *   DescribeTasks and ListTasks agree (moto keeps no exit code: ask `outcome`).
 *
 * Tasks already in the cluster when it starts are left alone (their process,
 * if any, belonged to another stand-in). It is test and local tooling: no
 * deployed stack contains it.
 *
 * @example
 * const standIn = new EcsTaskStandIn({ ecs, secretsManager, logs, cluster: 'remote-worker',
 *   region: 'us-east-1', motoEndpoint, deliver: (event) => ecsTaskStateChange(event) });
 * await standIn.start();
 * const outcome = await standIn.settled(taskArn); // { stopCode: 'EssentialContainerExited', exitCode: 0, … }
 * await standIn.stop();
 */
export class EcsTaskStandIn {
  readonly #o: EcsTaskStandInOptions;
  readonly #tasks = new Map<string, Tracked>();
  readonly #waiters = new Map<string, ((t: Tracked) => void)[]>();
  /** Tasks that were in the cluster before this stand-in started. */
  readonly #ignored = new Set<string>();
  #running = false;
  #loop: Promise<void> | undefined;

  constructor(options: EcsTaskStandInOptions) {
    this.#o = options;
  }

  async start(): Promise<void> {
    if (this.#o.motoEndpoint !== undefined) await freezeMotoTasks(this.#o.motoEndpoint);
    // Whatever is there now is not ours to run.
    for (const arn of await this.#list('RUNNING')) this.#ignored.add(arn);
    this.#running = true;
    this.#loop = this.#watch();
  }

  /** Stop watching; kill what still runs (each still ends with its STOPPED event) and wait for it. */
  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
    for (const t of this.#tasks.values()) {
      if (t.child?.pid !== undefined && t.phase !== 'stopped') killTree(t.child.pid);
    }
    await Promise.all([...this.#tasks.values()].map((t) => t.done.then(() => t.deliveries)));
  }

  /** How the task ended, once it has. */
  outcome(taskArn: string): TaskOutcome | undefined {
    return this.#tasks.get(taskArn)?.outcome;
  }

  /** Every task this stand-in ran, in the order it saw them. */
  get taskArns(): readonly string[] {
    return [...this.#tasks.keys()];
  }

  /** Resolves when the task has ended and its STOPPED event was delivered (or given up on). */
  async settled(taskArn: string): Promise<TaskOutcome> {
    const tracked =
      this.#tasks.get(taskArn) ??
      (await new Promise<Tracked>((resolve) => {
        this.#waiters.set(taskArn, [...(this.#waiters.get(taskArn) ?? []), resolve]);
      }));
    const outcome = await tracked.done;
    await tracked.deliveries;
    return outcome;
  }

  async #watch(): Promise<void> {
    while (this.#running) {
      try {
        await this.#sweep();
      } catch (error) {
        this.#o.logger?.error('ecs stand-in: listing the cluster failed', { error: error as Error });
      }
      await sleep(this.#o.pollMs ?? 250);
    }
  }

  async #sweep(): Promise<void> {
    const fresh = (await this.#list('RUNNING')).filter((a) => !this.#tasks.has(a) && !this.#ignored.has(a));
    for (const task of await this.#describe(fresh)) this.#begin(task);
    const live = [...this.#tasks.values()].filter((t) => t.phase === 'starting' || t.phase === 'running');
    if (live.length === 0) return;
    const stopped = new Set(await this.#list('STOPPED'));
    const asked = live.filter((t) => stopped.has(t.arn) && t.stopRequested === undefined);
    for (const task of await this.#describe(asked.map((t) => t.arn))) {
      const tracked = this.#tasks.get(task.taskArn ?? '');
      if (tracked !== undefined) this.#stopRequested(tracked, task.stoppedReason || 'Task stopped by user');
    }
  }

  #list(desiredStatus: 'RUNNING' | 'STOPPED'): Promise<string[]> {
    return listTaskArns(this.#o.ecs, this.#o.cluster, desiredStatus);
  }

  #describe(arns: readonly string[]): Promise<Task[]> {
    return describeTasks(this.#o.ecs, this.#o.cluster, arns);
  }

  #begin(task: Task): void {
    const arn = task.taskArn ?? '';
    let finish: (o: TaskOutcome) => void = () => {};
    const done = new Promise<TaskOutcome>((resolve) => {
      finish = resolve;
    });
    const tracked: Tracked = {
      arn,
      phase: 'starting',
      version: 0,
      task,
      containerName: task.overrides?.containerOverrides?.[0]?.name ?? task.containers?.[0]?.name ?? '',
      deliveries: Promise.resolve(),
      done,
      finish,
    };
    this.#tasks.set(arn, tracked);
    for (const resolve of this.#waiters.get(arn) ?? []) resolve(tracked);
    this.#waiters.delete(arn);
    this.#run(tracked).catch((error: unknown) => {
      this.#o.logger?.error('ecs stand-in: task failed unexpectedly', {
        taskArn: arn,
        error: error as Error,
      });
      this.#end(tracked, {
        stopCode: 'TaskFailedToStart',
        stoppedReason: `the ECS task stand-in failed: ${(error as Error).message}`,
      });
    });
  }

  async #run(t: Tracked): Promise<void> {
    this.#emit(t, 'PROVISIONING', 'RUNNING');
    const { taskDefinition } = await this.#o.ecs.send(
      new DescribeTaskDefinitionCommand({ taskDefinition: t.task.taskDefinitionArn }),
    );
    const definitions = taskDefinition?.containerDefinitions ?? [];
    const definition = definitions.find((c) => c.name === t.containerName) ?? definitions[0];
    if (definition === undefined) {
      this.#end(t, { stopCode: 'TaskFailedToStart', stoppedReason: 'the task definition has no container' });
      return;
    }
    t.containerName = definition.name ?? t.containerName;
    if (definitions.length > 1) {
      this.#o.logger?.warn('ecs stand-in: only the first container of a task runs', { taskArn: t.arn });
    }
    const override = t.task.overrides?.containerOverrides?.find((c) => c.name === t.containerName);

    let env: Record<string, string>;
    try {
      env = await containerEnvironment({
        definition,
        override,
        secretsManager: this.#o.secretsManager,
        region: this.#o.region,
        host: this.#o.hostEnv ?? defaultHostEnv(),
      });
    } catch (error) {
      if (!(error instanceof SecretFetchError)) throw error;
      this.#end(t, {
        stopCode: 'TaskFailedToStart',
        stoppedReason: `ResourceInitializationError: unable to pull secrets or registry auth: ${error.message}`,
      });
      return;
    }
    if (t.stopRequested !== undefined) {
      this.#end(t, { stopCode: 'UserInitiated', stoppedReason: t.stopRequested });
      return;
    }

    const out = await awslogsStreamFor(this.#o.logs, definition, t.arn);
    const argv = [
      ...(this.#o.entrypoint ?? shimEntrypoint)(definition.image ?? ''),
      ...(override?.command ?? definition.command ?? []),
    ];
    const { child, ended } = startContainerProcess(argv, env, (chunk) => out?.write(chunk));
    t.child = child;
    child.once('spawn', () => {
      t.phase = t.stopRequested === undefined ? 'running' : t.phase;
      this.#emit(t, 'RUNNING', 'RUNNING');
      // A stop that arrived while the process was starting.
      if (t.stopRequested !== undefined) this.#terminate(t, definition);
    });

    const end = await ended;
    await out?.close().catch((e: unknown) => {
      this.#o.logger?.error('ecs stand-in: shipping output failed', { taskArn: t.arn, error: e as Error });
    });
    if ('error' in end) {
      this.#end(t, {
        stopCode: 'TaskFailedToStart',
        stoppedReason: 'CannotStartContainerError: the entrypoint could not be started',
        containerReason: `CannotStartContainerError: ${end.error.message}`,
      });
      return;
    }
    const { exitCode } = end;
    this.#end(
      t,
      t.stopRequested === undefined
        ? { stopCode: 'EssentialContainerExited', stoppedReason: ESSENTIAL_EXITED, exitCode }
        : { stopCode: 'UserInitiated', stoppedReason: t.stopRequested, exitCode },
    );
  }

  #stopRequested(t: Tracked, reason: string): void {
    t.stopRequested = reason;
    if (t.phase !== 'running') return; // a task still starting is stopped once its process exists (or never starts)
    void this.#describeDefinitionAndTerminate(t);
  }

  async #describeDefinitionAndTerminate(t: Tracked): Promise<void> {
    const { taskDefinition } = await this.#o.ecs
      .send(new DescribeTaskDefinitionCommand({ taskDefinition: t.task.taskDefinitionArn }))
      .catch(() => ({ taskDefinition: undefined }));
    const definition = taskDefinition?.containerDefinitions?.find((c) => c.name === t.containerName);
    this.#terminate(t, definition ?? {});
  }

  /** SIGTERM to the entrypoint (PID 1 of a container), then SIGKILL to all it started after stopTimeout. */
  #terminate(t: Tracked, definition: ContainerDefinition): void {
    const pid = t.child?.pid;
    if (pid === undefined || t.phase === 'stopping' || t.phase === 'stopped') return;
    t.phase = 'stopping';
    const stopTimeout = Math.min(
      definition.stopTimeout ?? DEFAULT_STOP_TIMEOUT_SECONDS,
      this.#o.maxStopTimeoutSeconds ?? Number.POSITIVE_INFINITY,
    );
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
    const timer = setTimeout(() => killTree(pid), stopTimeout * 1000);
    timer.unref();
    t.child?.once('close', () => {
      clearTimeout(timer);
      // The tool runs in its own process group under the shim; a container's end takes it along.
      killTree(pid);
    });
  }

  #end(t: Tracked, outcome: TaskOutcome): void {
    if (t.phase === 'stopped') return;
    t.phase = 'stopped';
    t.outcome = outcome;
    this.#emit(t, 'STOPPED', 'STOPPED', outcome);
    // After the event: a reader of DescribeTasks must not see STOPPED (without an exit code) first.
    t.deliveries = t.deliveries.then(async () => {
      if (t.stopRequested !== undefined) return;
      try {
        await this.#o.ecs.send(
          new StopTaskCommand({ cluster: this.#o.cluster, task: t.arn, reason: outcome.stoppedReason }),
        );
      } catch (error) {
        this.#o.logger?.warn('ecs stand-in: StopTask in the emulator failed', {
          taskArn: t.arn,
          error: error as Error,
        });
      }
    });
    t.finish(outcome);
  }

  #emit(
    t: Tracked,
    lastStatus: TaskChange['lastStatus'],
    desiredStatus: TaskChange['desiredStatus'],
    outcome?: TaskOutcome,
  ): void {
    t.version += 1;
    const change: TaskChange = {
      lastStatus,
      desiredStatus,
      version: t.version,
      containerName: t.containerName,
      at: new Date(),
      ...(outcome === undefined ? {} : { outcome }),
    };
    t.deliveries = t.deliveries.then(async () => {
      const event = taskStateChangeEvent(t.task, change, this.#o.region);
      await deliverWithRetries(this.#o.deliver, event, (error) =>
        this.#o.logger?.error('ecs stand-in: event not delivered', {
          taskArn: t.arn,
          lastStatus,
          version: change.version,
          error: error as Error,
        }),
      );
    });
  }
}
