import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import {
  type ContainerDefinition,
  DescribeTaskDefinitionCommand,
  DescribeTasksCommand,
  type ECSClient,
  ListTasksCommand,
  StopTaskCommand,
  type Task,
} from '@aws-sdk/client-ecs';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { EcsTaskStateChangeEvent } from '../../functions/status-sync/ecs-task-state-change.ts';
import { backoffMs } from '../../shared/lib/backoff.ts';
import { sleep } from '../../shared/lib/sleep.ts';
import { AwslogsStream } from './awslogs.ts';
import { containerEnvironment, SecretFetchError } from './container-env.ts';
import { type TaskChange, type TaskOutcome, taskStateChangeEvent } from './task-event.ts';

export type { TaskOutcome } from './task-event.ts';

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

const DEFAULT_STOP_TIMEOUT_SECONDS = 30;
const DELIVERY_ATTEMPTS = 5;
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

const shimEntrypoint = (): readonly string[] => [
  process.execPath,
  '--import',
  import.meta.resolve('tsx'),
  fileURLToPath(new URL('../../runners/shim/main.ts', import.meta.url)),
];

function defaultHostEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG', 'TMPDIR']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** Every process below `pid`, read from /proc: what a container's PID namespace would hold. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // the process ended while we looked
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      found.push(c);
      walk(c);
    }
  };
  walk(pid);
  return found;
}

function killTree(pid: number): void {
  for (const p of [pid, ...descendants(pid)]) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // already gone
    }
  }
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

  async #list(desiredStatus: 'RUNNING' | 'STOPPED'): Promise<string[]> {
    const arns: string[] = [];
    let nextToken: string | undefined;
    do {
      const page = await this.#o.ecs.send(
        new ListTasksCommand({
          cluster: this.#o.cluster,
          desiredStatus,
          ...(nextToken === undefined ? {} : { nextToken }),
        }),
      );
      arns.push(...(page.taskArns ?? []));
      nextToken = page.nextToken;
    } while (nextToken !== undefined);
    return arns;
  }

  async #describe(arns: readonly string[]): Promise<Task[]> {
    const tasks: Task[] = [];
    for (let i = 0; i < arns.length; i += 100) {
      const { tasks: page = [] } = await this.#o.ecs.send(
        new DescribeTasksCommand({ cluster: this.#o.cluster, tasks: arns.slice(i, i + 100) }),
      );
      tasks.push(...page);
    }
    return tasks;
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

    const out = await this.#logStream(definition, t.arn);
    const argv = [
      ...(this.#o.entrypoint ?? shimEntrypoint)(definition.image ?? ''),
      ...(override?.command ?? definition.command ?? []),
    ];
    const workDir = mkdtempSync(join(tmpdir(), 'rw-ecs-task-'));
    const [file = '', ...args] = argv;
    const child = spawn(file, args, { cwd: workDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    t.child = child;
    const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>(
      (resolve) => {
        child.once('error', (error) => resolve({ code: null, signal: null, error }));
        child.once('close', (code, signal) => resolve({ code, signal }));
      },
    );
    child.once('spawn', () => {
      t.phase = t.stopRequested === undefined ? 'running' : t.phase;
      this.#emit(t, 'RUNNING', 'RUNNING');
      // A stop that arrived while the process was starting.
      if (t.stopRequested !== undefined) this.#terminate(t, definition);
    });
    for (const stream of [child.stdout, child.stderr])
      stream?.on('data', (chunk: Buffer) => out?.write(chunk));

    const { code, signal, error } = await ended;
    await out?.close().catch((e: unknown) => {
      this.#o.logger?.error('ecs stand-in: shipping output failed', { taskArn: t.arn, error: e as Error });
    });
    rmSync(workDir, { recursive: true, force: true });
    if (error !== undefined) {
      this.#end(t, {
        stopCode: 'TaskFailedToStart',
        stoppedReason: 'CannotStartContainerError: the entrypoint could not be started',
        containerReason: `CannotStartContainerError: ${error.message}`,
      });
      return;
    }
    const exitCode = code ?? 128 + (signal === null ? 9 : (constants.signals[signal] ?? 9));
    this.#end(
      t,
      t.stopRequested === undefined
        ? { stopCode: 'EssentialContainerExited', stoppedReason: ESSENTIAL_EXITED, exitCode }
        : { stopCode: 'UserInitiated', stoppedReason: t.stopRequested, exitCode },
    );
  }

  /** The awslogs driver's stream, when the container logs with it; otherwise output goes nowhere, as on ECS. */
  async #logStream(definition: ContainerDefinition, taskArn: string): Promise<AwslogsStream | undefined> {
    const config = definition.logConfiguration;
    const group = config?.options?.['awslogs-group'];
    if (config?.logDriver !== 'awslogs' || group === undefined) return undefined;
    const prefix = config.options?.['awslogs-stream-prefix'];
    const taskId = taskArn.split('/').at(-1) ?? taskArn;
    // Fargate requires a prefix; without one the stream is named by the task id alone.
    const stream = prefix === undefined ? taskId : `${prefix}/${definition.name}/${taskId}`;
    return AwslogsStream.open(this.#o.logs, group, stream);
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
      for (let attempt = 1; ; attempt += 1) {
        try {
          await this.#o.deliver(event);
          return;
        } catch (error) {
          if (attempt >= DELIVERY_ATTEMPTS) {
            this.#o.logger?.error('ecs stand-in: event not delivered', {
              taskArn: t.arn,
              lastStatus,
              version: change.version,
              error: error as Error,
            });
            return;
          }
          await sleep(backoffMs(attempt, { baseMs: 100 }));
        }
      }
    });
  }
}

/** moto: keep ECS tasks where RunTask leaves them (RUNNING) until StopTask (see `motoEndpoint`). */
export async function freezeMotoTasks(endpoint: string): Promise<void> {
  const response = await fetch(`${endpoint}/moto-api/state-manager/set-transition`, {
    method: 'POST',
    body: JSON.stringify({
      model_name: 'ecs::task',
      transition: { progression: 'manual', times: 1_000_000 },
    }),
  });
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`moto's state manager answered ${response.status}`);
}
