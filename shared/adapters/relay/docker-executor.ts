import { spawn } from 'node:child_process';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import type { TaskSpec } from '../../domain/task.ts';
import type {
  ExecutionRequest,
  ExecutionResult,
  Executor,
  LineSink,
  RunningExecution,
} from '../../ports/executor.ts';
import type { LogLineInput } from '../../ports/log-store.ts';

/** Where assets appear inside the runner container (the seeds: assets are bind-mounted under /ansible/). */
export const CONTAINER_ASSET_ROOT = '/ansible/assets';
export const MANAGED_LABEL = 'remote-worker.managed';
export const RUN_ID_LABEL = 'remote-worker.run-id';

/** Lines the shim writes itself start with this; they are shipped as `system`. */
const SHIM_PREFIX = 'remote-worker: ';
/** Last shipped `docker logs --timestamps` stamp, so an adopting relay resumes after it. */
const SINCE_FILE = 'docker.since';
/** After `docker wait` returns, how long the log follower may take to deliver the tail. */
const LOG_DRAIN_MS = 5000;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface DockerExecutorOptions {
  /** The docker CLI: a name on PATH or a path. Default `docker`. */
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
  /** Environment of the docker CLI itself (DOCKER_HOST, DOCKER_CONFIG …). Default: the relay's. */
  readonly cliEnv?: NodeJS.ProcessEnv;
}

/** Deterministic container name: a second start for the same run finds the first container instead of making another. */
export function containerName(runId: string): string {
  return `rw-${runId.toLowerCase().replace(/[^a-z0-9_.-]/g, '-')}`;
}

interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly error?: NodeJS.ErrnoException;
}

function runCli(bin: string, args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs?: number) {
  return new Promise<CliResult>((resolve) => {
    const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            child.kill('SIGKILL');
          }, timeoutMs);
    child.once('error', (error) => {
      if (timer !== undefined) clearTimeout(timer);
      resolve({ code: null, stdout, stderr, error });
    });
    child.once('close', (code) => {
      if (timer !== undefined) clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Whether a Docker engine answers through `bin` within `timeoutMs` (the
 * `auto` executor choice): the CLI alone is not enough, `docker version`
 * must reach the server.
 */
export async function dockerAvailable(bin = 'docker', timeoutMs = 3000): Promise<boolean> {
  const result = await runCli(bin, ['version', '--format', '{{.Server.Version}}'], process.env, timeoutMs);
  return result.code === 0 && result.stdout.trim() !== '';
}

const isUnavailable = (stderr: string): boolean =>
  /Cannot connect to the Docker daemon|error during connect|Is the docker daemon running|connection refused/i.test(
    stderr,
  );

/** `2024-05-01T10:00:00.123456789Z text` → stamp and text; docker's stamps are fixed-width, so they sort as strings. */
function splitStamp(line: string): { stamp: string; text: string } | undefined {
  const space = line.indexOf(' ');
  if (space < 20 || !/^\d{4}-\d\d-\d\dT/.test(line)) return undefined;
  return { stamp: line.slice(0, space), text: line.slice(space + 1) };
}

/**
 * Runs each task as a sibling container through the docker CLI; the runner
 * image's entrypoint is the task shim, which redacts inside the container.
 *
 * Nothing secret is put on a command line: the spec (whose extra vars may
 * carry a WinRM password on the local runner) and every secret are passed as
 * `-e NAME`, which makes the CLI copy the value from its own environment. The
 * container is named by run id (`rw-<id>`) and labelled, so a restarted relay
 * adopts it by name and reaps strays by label.
 *
 * @example
 * const executor = new DockerExecutor({ network: 'bridge', assetRoot: '/srv/assets' });
 * const exec = await executor.start(
 *   { runId, image: 'chrweav/ansible-winrm:latest', spec, secretEnv: { RW_SECRET_0: 'hunter2' }, workDir },
 *   (lines) => void logs.append(runId, lines),
 * );
 * const { exitCode } = await exec.done; // the container is removed by then
 */
export class DockerExecutor implements Executor {
  readonly name = 'docker' as const;
  private readonly bin: string;
  private readonly network: string;
  private readonly cliEnv: NodeJS.ProcessEnv;

  constructor(private readonly options: DockerExecutorOptions = {}) {
    this.bin = options.bin ?? 'docker';
    this.network = options.network ?? 'bridge';
    this.cliEnv = options.cliEnv ?? process.env;
  }

  async start(request: ExecutionRequest, sink: LineSink): Promise<RunningExecution> {
    if (request.image === '') throw new LaunchRejectedError('The docker executor needs a runner image');
    const name = containerName(request.runId);
    const { spec, mount } = this.containerSpec(request.spec);
    const passEnv: Record<string, string> = { ...request.env, ...request.secretEnv };
    for (const envName of Object.keys(passEnv)) {
      // `-e A=B` would put B on the command line.
      if (!ENV_NAME.test(envName))
        throw new LaunchRejectedError(`Invalid environment variable name: ${envName}`);
    }
    const args = [
      'run',
      '-d',
      '--name',
      name,
      '--label',
      `${RUN_ID_LABEL}=${request.runId}`,
      '--label',
      `${MANAGED_LABEL}=true`,
      '--network',
      this.network,
      '--init',
      ...(this.options.memory === undefined ? [] : ['--memory', this.options.memory]),
      ...(this.options.cpus === undefined ? [] : ['--cpus', this.options.cpus]),
      ...(mount === undefined ? [] : ['-v', `${mount}:${CONTAINER_ASSET_ROOT}:ro`]),
      '-e',
      'RW_TASK',
      ...Object.keys(passEnv).flatMap((envName) => ['-e', envName]),
      request.image,
    ];
    const env = { ...this.cliEnv, ...passEnv, RW_TASK: JSON.stringify(spec) };
    const result = await runCli(this.bin, args, env);
    if (result.code !== 0) {
      if (/already in use/i.test(result.stderr)) {
        // A redelivered start: the container of the first attempt is the task.
        return this.adopt(`docker:${name}`, request.workDir, sink);
      }
      throw this.cliError('docker run', result);
    }
    return this.attach(name, request.workDir, sink);
  }

  async adopt(handle: string, workDir: string, sink: LineSink): Promise<RunningExecution> {
    const name = /^docker:([A-Za-z0-9][A-Za-z0-9_.-]*)$/.exec(handle)?.[1];
    if (name === undefined) throw new LaunchRejectedError(`Not a docker executor handle: ${handle}`);
    const inspect = await runCli(this.bin, ['inspect', '--format', '{{json .State}}', name], this.cliEnv);
    if (inspect.code !== 0) {
      if (inspect.error === undefined && /no such (object|container)/i.test(inspect.stderr)) {
        const lost = `Container ${name} no longer exists; its exit code is unknown`;
        return { handle, done: Promise.resolve({ lost }), kill: async () => {} };
      }
      throw this.cliError('docker inspect', inspect);
    }
    // Running or exited, `docker logs --follow` and `docker wait` do the right thing: an exited container answers at once.
    return this.attach(name, workDir, sink);
  }

  async reapOrphans(keep: ReadonlySet<string>): Promise<readonly string[]> {
    const list = await runCli(
      this.bin,
      [
        'ps',
        '-a',
        '--filter',
        `label=${MANAGED_LABEL}=true`,
        '--format',
        `{{.Names}}\t{{.Label "${RUN_ID_LABEL}"}}`,
      ],
      this.cliEnv,
    );
    if (list.code !== 0) throw this.cliError('docker ps', list);
    const reaped: string[] = [];
    for (const row of list.stdout.split('\n')) {
      const [name, runId] = row.trim().split('\t');
      if (name === undefined || name === '' || runId === undefined || keep.has(runId)) continue;
      const removed = await runCli(this.bin, ['rm', '-f', name], this.cliEnv);
      if (removed.code === 0) reaped.push(runId);
    }
    return reaped;
  }

  /** The spec as the container sees it, and the host directory to mount for the asset. */
  private containerSpec(spec: TaskSpec): { spec: TaskSpec; mount?: string } {
    if (spec.asset.kind === 'url') return { spec };
    const hostPath = spec.asset.path;
    const root = this.options.assetRoot;
    let mount: string;
    let inside: string;
    if (root === undefined) {
      mount = dirname(hostPath);
      inside = `${CONTAINER_ASSET_ROOT}/${basename(hostPath)}`;
    } else {
      const rel = relative(root, hostPath);
      if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
        throw new LaunchRejectedError(`The asset ${hostPath} is outside the asset root ${root}`);
      }
      mount = root;
      inside = `${CONTAINER_ASSET_ROOT}/${rel.split(sep).join('/')}`;
    }
    if (mount.includes(':')) {
      throw new LaunchRejectedError(
        `Cannot bind-mount ${mount}: a ':' in the path breaks docker's -v syntax`,
      );
    }
    return { spec: { ...spec, asset: { kind: 'file', path: inside } }, mount };
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

  /** Follow the container's log and wait for its exit; remove it once both are done. */
  private attach(name: string, workDir: string, sink: LineSink): RunningExecution {
    const sinceFile = join(workDir, SINCE_FILE);
    let since = '';
    try {
      since = readFileSync(sinceFile, 'utf8').trim();
    } catch {
      since = '';
    }
    const logs = spawn(
      this.bin,
      ['logs', '--follow', '--timestamps', ...(since === '' ? [] : ['--since', since]), name],
      { env: this.cliEnv, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const ship = (raw: readonly string[]): void => {
      const lines: LogLineInput[] = [];
      let last = since;
      for (const line of raw) {
        const parsed = splitStamp(line);
        if (parsed === undefined) {
          lines.push({ stream: 'system', text: line });
          continue;
        }
        // --since is inclusive and has second granularity on some engines: drop what was shipped already.
        if (since !== '' && parsed.stamp <= since) continue;
        const text = parsed.text.replace(/\r$/, '');
        lines.push({
          stream: text.startsWith(SHIM_PREFIX) ? 'system' : 'stdout',
          text,
          at: `${parsed.stamp.slice(0, 23)}Z`,
        });
        if (parsed.stamp > last) last = parsed.stamp;
      }
      if (lines.length === 0) return;
      sink(lines);
      if (last !== since) {
        since = last;
        try {
          writeFileSync(`${sinceFile}.tmp`, since);
          renameSync(`${sinceFile}.tmp`, sinceFile);
        } catch {
          // The work dir may be gone already; only adoption after a crash needs the stamp.
        }
      }
    };
    const follow = (stream: NodeJS.ReadableStream): Promise<void> =>
      new Promise((resolve) => {
        let partial = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => {
          const parts = (partial + chunk).split('\n');
          partial = parts.pop() ?? '';
          ship(parts);
        });
        const end = (): void => {
          if (partial !== '') ship([partial]);
          partial = '';
          resolve();
        };
        stream.once('end', end);
        stream.once('error', end);
      });
    const logsDone = Promise.all([follow(logs.stdout), follow(logs.stderr)]);
    logs.once('error', () => {});

    let stopping: Promise<CliResult> | undefined;
    const done = (async (): Promise<ExecutionResult> => {
      const waited = await runCli(this.bin, ['wait', name], this.cliEnv);
      const drained = await Promise.race([
        logsDone.then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), LOG_DRAIN_MS)),
      ]);
      if (!drained) logs.kill('SIGKILL');
      if (stopping !== undefined) await stopping;
      const code = Number(waited.stdout.trim());
      const result: ExecutionResult =
        waited.code === 0 && waited.stdout.trim() !== '' && Number.isInteger(code)
          ? { exitCode: code }
          : { lost: `docker wait ${name} failed: ${waited.stderr.trim() || `exit code ${waited.code}`}` };
      await runCli(this.bin, ['rm', '-f', name], this.cliEnv);
      return result;
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
