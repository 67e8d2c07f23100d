import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { ContainerTarget } from '../../shared/domain/container-target.ts';
import type { TaskSpec } from '../../shared/domain/task-spec.ts';
import { containerCommand, dockerRunArgs, SECRET_ENV_DIR } from './container.ts';
import { positiveInt, redactEnvNames } from './env.ts';
import { orShimError } from './errors.ts';
import { writePrivateFile } from './files.ts';
import type { Invocation } from './invocation.ts';

/** The started tool: the process whose pipes the shim reads, and how to stop and clean up after it. */
export interface StartedTool {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  /** Replaces signalling the child's group (container mode: `docker stop`, then removal on SIGKILL). */
  readonly stopper?: (signal: NodeJS.Signals) => void;
  /** Removes the container, whatever state it is in; resolves once the engine answered (nothing in process mode). */
  readonly removeContainer: () => Promise<unknown>;
}

/** Signal a whole process group (the tool leads its own); false when it is gone already. */
export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Start the tool as the leader of its own process group: directly (process
 * mode), or as `docker run` of the tool (container mode). Secrets never reach
 * the tool's or the CLI's environment as values a module could print: play
 * variables and the SSH key are in 0600 files already, and in container mode
 * the secret env the tool reads by name goes into 0600 files the container's
 * prologue exports.
 *
 * @example
 * const { child, stopper, removeContainer } = startTool(spec, workDir, process.env, container, invocation, say);
 */
export function startTool(
  spec: TaskSpec,
  workDir: string,
  env: NodeJS.ProcessEnv,
  container: ContainerTarget | undefined,
  { command, toolEnv }: Invocation,
  say: (message: string) => void,
): StartedTool {
  if (container === undefined) {
    const childEnv: NodeJS.ProcessEnv = { ...env };
    // Secrets reach the tool as play variables through a 0600 file, not as environment a module could print.
    for (const { env: name } of spec.secretVars) delete childEnv[name];
    // The key reaches the tool as a 0600 file.
    if (spec.sshKeyEnv !== undefined) delete childEnv[spec.sshKeyEnv];
    delete childEnv.RW_TASK;
    delete childEnv.RW_TASK_FILE;
    Object.assign(childEnv, toolEnv);
    const child = spawn(command.tool, command.args, {
      cwd: workDir,
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    return { child, removeContainer: async () => {} };
  }
  // Secret env the tool reads by name: 0600 files in the mount, exported inside the container.
  const secretEnvNames = [...(spec.secretEnvNames ?? []), ...redactEnvNames(env)].filter(
    (name) => env[name] !== undefined && name !== 'KUBECONFIG' && name !== 'K8S_AUTH_KUBECONFIG',
  );
  if (secretEnvNames.length > 0) mkdirSync(join(workDir, SECRET_ENV_DIR), { mode: 0o700 });
  for (const name of secretEnvNames) writePrivateFile(join(workDir, SECRET_ENV_DIR, name), env[name] ?? '');
  // The CLI itself gets no secret: its environment is readable in /proc as long as it runs.
  const cliEnv: NodeJS.ProcessEnv = { ...env };
  for (const name of [
    ...spec.secretVars.map((s) => s.env),
    ...(spec.secretEnvNames ?? []),
    ...redactEnvNames(env),
    ...(spec.sshKeyEnv === undefined ? [] : [spec.sshKeyEnv]),
    'KUBECONFIG',
    'K8S_AUTH_KUBECONFIG',
    'RW_TASK',
    'RW_TASK_FILE',
  ]) {
    delete cliEnv[name];
  }
  const args = orShimError(() => dockerRunArgs(container, workDir, command.tool, command.args, toolEnv));
  say(`in container ${container.name} from image ${container.image}`);
  const child = spawn(container.bin, args, {
    cwd: workDir,
    env: cliEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let removing: Promise<unknown> | undefined;
  const removeContainer = (): Promise<unknown> => {
    // SIGKILL first: podman's `rm -f` would wait out the stop timeout (10 s) where docker's kills at once.
    removing ??= containerCommand(container, ['kill', container.name], cliEnv).then(() =>
      containerCommand(container, ['rm', '-f', container.name], cliEnv),
    );
    return removing;
  };
  let stopping = false;
  const stopper = (sig: NodeJS.Signals): void => {
    if (sig === 'SIGKILL') {
      // The engine did not stop it within the grace: remove it, and the CLI with it.
      void removeContainer();
      if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
      return;
    }
    if (stopping) return;
    stopping = true;
    // The engine sends SIGTERM to the container's init and SIGKILL after the grace; signalling the CLI would not reach it.
    const graceSeconds = Math.max(1, Math.ceil(positiveInt(env.RW_KILL_GRACE_MS, 5000) / 1000));
    void containerCommand(container, ['stop', '-t', String(graceSeconds), container.name], cliEnv);
  };
  return { child, stopper, removeContainer };
}
