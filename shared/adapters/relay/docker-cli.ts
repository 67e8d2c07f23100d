import { spawn } from 'node:child_process';

/**
 * The docker CLI (or podman's), run as a child process: the docker executor
 * talks to the engine only through it, so whatever engine and context the
 * CLI is configured for (DOCKER_HOST, podman's socket) is the one used.
 *
 * @example
 * const { code, stdout } = await runCli('podman', ['inspect', '--type', 'container', 'rw-run-1'], process.env);
 */

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly error?: NodeJS.ErrnoException;
}

/** Run the docker CLI once and collect its output; never rejects (a CLI that cannot start answers `error`). */
export function runCli(bin: string, args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs?: number) {
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

/** The CLI's words for an engine it cannot reach (docker's and podman's). */
export const isUnavailable = (stderr: string): boolean =>
  /Cannot connect to the Docker daemon|error during connect|Is the docker daemon running|connection refused/i.test(
    stderr,
  );
/** The CLI's words for a container that is not there (docker's and podman's). */
export const isNoSuchContainer = (stderr: string): boolean =>
  /no such (object|container)|no container with/i.test(stderr);
