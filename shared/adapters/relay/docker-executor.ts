import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import { CONTAINER_WORK_DIR, EXIT_FILE, SHIM_PREFIX } from '../../domain/shim-protocol.ts';
import type { ExecutionRequest, Executor, LineSink, RunningExecution } from '../../ports/executor.ts';
import { type CliResult, isNoSuchContainer, isUnavailable, runCli } from './docker-cli.ts';
import {
  assetMountFor,
  containerName,
  containerTarget,
  EXECUTOR_LABEL,
  MANAGED_LABEL,
  RUN_ID_LABEL,
} from './docker-target.ts';
import { DEFAULT_INHERIT_ENV, ProcessExecutor } from './process-executor.ts';
import { taskAlive } from './procfs.ts';

/** The docker CLI's own configuration, passed through to the shim that runs `docker run`. */
const CLI_ENV = [
  'DOCKER_HOST',
  'DOCKER_CONFIG',
  'DOCKER_CONTEXT',
  'DOCKER_CERT_PATH',
  'DOCKER_TLS_VERIFY',
  'CONTAINER_HOST',
  'CONTAINERS_CONF',
  'XDG_RUNTIME_DIR',
] as const;

export interface DockerExecutorOptions {
  /** The docker CLI: a name on PATH or a path; `podman` works. Default `docker`. */
  readonly bin?: string;
  /** Network the task container joins. Default `bridge` (the host's route to on-prem targets). */
  readonly network?: string;
  /**
   * Host directory holding every asset, mounted read-only at /ansible/assets.
   * Without it, the asset's own directory is mounted (a playbook then still
   * sees its sibling files, roles and templates).
   */
  readonly assetRoot?: string;
  /** `--memory`, e.g. `2g`. */
  readonly memory?: string;
  /** `--cpus`, e.g. `1.5`. */
  readonly cpus?: string;
  /** `--user` for the task container. Default: the image's user (which must be able to read the relay's 0600 files: root, or the relay's uid). */
  readonly user?: string;
  /** Further bind mounts, `-v` syntax (`/etc/ssl/certs:/etc/ssl/certs:ro`); never over /ansible. */
  readonly volumes?: readonly string[];
  /** Environment of the docker CLI itself (DOCKER_HOST, DOCKER_CONFIG …). Default: the relay's. */
  readonly cliEnv?: NodeJS.ProcessEnv;
  /** Marks the shims and containers this executor starts; stable across restarts of one relay. Default `relay`. */
  readonly executorId?: string;
  /** A bundled shim run with plain `node`. Default: runners/shim/main.ts through tsx. */
  readonly shimPath?: string;
  /** How often the shim's output and liveness are polled. Default 200 ms. */
  readonly pollMs?: number;
  /** Grace between SIGTERM and SIGKILL when reaping orphans. Default 5000 ms. */
  readonly reapGraceMs?: number;
}

const HANDLE = /^docker:([a-z0-9][a-z0-9_.-]*)(?:\/(process:(\d+):(\d+)))?$/;

/**
 * Runs each task's tool in a sibling container through the docker CLI, from
 * any image with the tool on its PATH: the task shim itself runs on the relay
 * host (a supervised child process group, exactly as in the process
 * executor) and starts `docker run --rm --name rw-<run> … IMAGE <tool> …`
 * for the tool alone (runners/shim/container.ts). So the inventory, vars
 * files, wrapper playbooks, secrets files and the redaction of the
 * container's output all happen on the relay side, and the image needs no
 * code of ours.
 *
 * Why the shim stays outside: a task then outlives a relay crash the way a
 * process task does (its output goes to a file the relay tails from a saved
 * offset, its result to exit.json), the container's output is redacted
 * before anything stores it, and no secret has to cross into the container's
 * configuration — it is mounted as 0600 files in the read-only `/ansible`
 * directory the shim removes at the end.
 *
 * The container is named by run id (`rw-<id>`) and labelled with the run id
 * and this executor's id: a second start for a run adopts the first's
 * container, and `reapOrphans` removes strays by label.
 *
 * @example
 * const executor = new DockerExecutor({ bin: 'podman', assetRoot: '/srv/assets', executorId: 'relay-1' });
 * const exec = await executor.start(
 *   { runId, image: 'localhost/ansible:bookworm', spec, secretEnv: { RW_SECRET_0: 'hunter2' }, workDir },
 *   (lines) => void logs.append(runId, lines),
 * );
 * const { exitCode } = await exec.done; // the container is gone by then
 */
export class DockerExecutor implements Executor {
  readonly name = 'docker' as const;
  private readonly bin: string;
  private readonly cliEnv: NodeJS.ProcessEnv;
  private readonly executorId: string;
  private readonly tasks: ProcessExecutor;

  constructor(private readonly options: DockerExecutorOptions = {}) {
    this.bin = options.bin ?? 'docker';
    this.cliEnv = options.cliEnv ?? process.env;
    this.executorId = options.executorId ?? 'relay';
    for (const volume of options.volumes ?? []) {
      const target = volume.split(':')[1] ?? '';
      if (
        !isAbsolute(target) ||
        target === CONTAINER_WORK_DIR ||
        target.startsWith(`${CONTAINER_WORK_DIR}/`)
      ) {
        throw new LaunchRejectedError(
          `Docker volume ${volume}: the container path must be absolute and outside /ansible`,
        );
      }
    }
    this.tasks = new ProcessExecutor({
      executorId: this.executorId,
      inheritEnv: [...DEFAULT_INHERIT_ENV, ...CLI_ENV],
      ...(options.shimPath === undefined ? {} : { shimPath: options.shimPath }),
      ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
      ...(options.reapGraceMs === undefined ? {} : { reapGraceMs: options.reapGraceMs }),
    });
  }

  async start(request: ExecutionRequest, sink: LineSink): Promise<RunningExecution> {
    if (request.image === '') throw new LaunchRejectedError('The docker executor needs a runner image');
    const name = containerName(request.runId);
    const assetMount = assetMountFor(request.spec, this.options.assetRoot);
    const inspect = await this.inspect(name);
    if (inspect !== 'missing') {
      // A redelivered start: the container of the first attempt is the task, never a second play.
      return this.adopt(`docker:${name}`, request.workDir, sink);
    }
    const target = containerTarget(this.bin, this.executorId, this.options, request, name, assetMount);
    const cliEnv: Record<string, string> = {};
    for (const key of CLI_ENV) {
      const value = this.cliEnv[key];
      if (value !== undefined) cliEnv[key] = value;
    }
    const execution = await this.tasks.start(
      { ...request, env: { ...request.env, ...cliEnv, RW_CONTAINER: JSON.stringify(target) } },
      sink,
    );
    return this.wrap(name, execution);
  }

  async adopt(handle: string, workDir: string, sink: LineSink): Promise<RunningExecution> {
    const match = HANDLE.exec(handle);
    const name = match?.[1];
    if (match === null || name === undefined) {
      throw new LaunchRejectedError(`Not a docker executor handle: ${handle}`);
    }
    const [, , processHandle, pid, starttime] = match;
    if (
      processHandle !== undefined &&
      (taskAlive(Number(pid), starttime ?? '') || existsSync(join(workDir, EXIT_FILE)))
    ) {
      // The shim still runs (it outlived the relay) or recorded its end: it has the output and the exit code.
      return this.wrap(name, await this.tasks.adopt(processHandle, workDir, sink));
    }
    return this.containerOnly(name, handle, sink);
  }

  async resume(runId: string, workDir: string, sink: LineSink): Promise<RunningExecution | undefined> {
    const name = containerName(runId);
    const shim = await this.tasks.resume(runId, workDir, sink);
    if (shim !== undefined) return this.wrap(name, shim);
    // The shim never started, but a container by this run's name is there: it is the task.
    if ((await this.inspect(name)) !== 'missing') return this.adopt(`docker:${name}`, workDir, sink);
    return undefined;
  }

  async reapOrphans(keep: ReadonlySet<string>): Promise<readonly string[]> {
    // Shims first: a SIGTERMed shim stops and removes its own container.
    const reaped = new Set(await this.tasks.reapOrphans(keep));
    const list = await runCli(
      this.bin,
      [
        'ps',
        '-a',
        '--filter',
        `label=${MANAGED_LABEL}=true`,
        '--filter',
        `label=${EXECUTOR_LABEL}=${this.executorId}`,
        '--format',
        '{{.Names}}',
      ],
      this.cliEnv,
    );
    if (list.code !== 0) throw this.cliError('docker ps', list);
    const names = list.stdout
      .split('\n')
      .map((n) => n.trim())
      .filter((n) => n !== '');
    for (const name of names) {
      // `docker ps` formats labels one way and podman another; `inspect` of the config's label map reads the same on both.
      const labelled = await runCli(
        this.bin,
        ['inspect', '--type', 'container', '--format', `{{index .Config.Labels "${RUN_ID_LABEL}"}}`, name],
        this.cliEnv,
      );
      const runId = labelled.stdout.trim();
      // Gone since the listing, or no run id to keep it by: nothing to decide on.
      if (labelled.code !== 0 || runId === '' || keep.has(runId)) continue;
      if (await this.forceRemove(name)) reaped.add(runId);
    }
    return [...reaped];
  }

  private async inspect(name: string): Promise<'missing' | 'present'> {
    const result = await runCli(
      this.bin,
      ['inspect', '--type', 'container', '--format', '{{.State.Status}}', name],
      this.cliEnv,
    );
    if (result.code === 0) return 'present';
    if (result.error === undefined && isNoSuchContainer(result.stderr)) return 'missing';
    throw this.cliError('docker inspect', result);
  }

  /**
   * SIGKILL, then remove: podman's `rm -f` first waits out the container's
   * stop timeout (10 s), docker's kills at once; both are done with this.
   * True when the container is gone.
   */
  private async forceRemove(name: string): Promise<boolean> {
    await runCli(this.bin, ['kill', name], this.cliEnv);
    const removed = await runCli(this.bin, ['rm', '-f', name], this.cliEnv);
    return removed.code === 0 || isNoSuchContainer(removed.stderr);
  }

  private cliError(what: string, result: CliResult): Error {
    if (result.error !== undefined) {
      return result.error.code === 'ENOENT'
        ? new LaunchRejectedError(`${what}: the docker CLI (${this.bin}) is not installed`)
        : new LauncherUnavailableError(`${what}: ${result.error.message}`, { cause: result.error });
    }
    const detail = result.stderr.trim() || `exit code ${result.code}`;
    return isUnavailable(result.stderr)
      ? new LauncherUnavailableError(`${what}: ${detail}`)
      : new LaunchRejectedError(`${what}: ${detail}`);
  }

  /**
   * The shim's execution, with the container removed once it is over: a
   * SIGKILLed (or crashed) shim cannot remove it itself, and an unsupervised
   * container must not go on running a play nobody records.
   */
  private wrap(name: string, execution: RunningExecution): RunningExecution {
    const done = execution.done.then(async (result) => {
      await this.forceRemove(name);
      return result;
    });
    return {
      handle: `docker:${name}/${execution.handle}`,
      done,
      kill: async (graceMs) => {
        await execution.kill(graceMs);
        await done;
      },
    };
  }

  /**
   * The shim is gone without a record (the relay's host or container went
   * down with it) but the container may still run: wait for it and report
   * its exit code. Its output after the shim died is not captured — the
   * container logs nothing to the engine, so that no unredacted output is
   * ever stored.
   */
  private async containerOnly(name: string, handle: string, sink: LineSink): Promise<RunningExecution> {
    if ((await this.inspect(name)) === 'missing') {
      const lost = `Container ${name} no longer exists and its supervisor left no exit record; its exit code is unknown`;
      return { handle, done: Promise.resolve({ lost }), kill: async () => {} };
    }
    await sink([
      {
        stream: 'system',
        text: `${SHIM_PREFIX}the task's supervisor is gone; waiting for container ${name} (its output from here on is not captured)`,
      },
    ]);
    let stopping: Promise<CliResult> | undefined;
    const done: RunningExecution['done'] = (async () => {
      const waited = await runCli(this.bin, ['wait', name], this.cliEnv);
      if (stopping !== undefined) await stopping;
      const code = Number(waited.stdout.trim());
      await this.forceRemove(name);
      return waited.code === 0 && waited.stdout.trim() !== '' && Number.isInteger(code)
        ? { exitCode: code }
        : { lost: `docker wait ${name} failed: ${waited.stderr.trim() || `exit code ${waited.code}`}` };
    })();
    const kill = async (graceMs: number): Promise<void> => {
      stopping ??= runCli(
        this.bin,
        ['stop', '-t', String(Math.max(0, Math.ceil(graceMs / 1000))), name],
        this.cliEnv,
      );
      await stopping;
      await done;
    };
    return { handle: `docker:${name}`, done, kill };
  }
}
