import { mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { ContainerTarget } from '../../shared/domain/container-target.ts';
import { CONTAINER_WORK_DIR } from '../../shared/domain/shim-protocol.ts';
import type { TaskSpec } from '../../shared/domain/task-spec.ts';
import { shellQuote, wrapperPlaybook } from '../../shared/domain/wrappers.ts';
import { resolveAsset } from './asset.ts';
import { containerPath, containerScratch } from './container.ts';
import { orShimError, ShimError } from './errors.ts';
import { readKubeconfigFile, writePrivateFile } from './files.ts';
import { k8sCommand, k8sNeedsAsset, type ToolCommand } from './k8s-command.ts';
import { isConnectionVar, secretPlayVars, sshKeyFileText } from './secrets.ts';

/** One tool invocation, ready to start: its argv and the environment the shim sets for it. */
export interface Invocation {
  readonly command: ToolCommand;
  /**
   * In container mode the tool gets exactly these variables; in process mode
   * they go on top of the shim's own. Never a secret: in container mode they
   * are part of the container's configuration.
   */
  readonly toolEnv: Readonly<Record<string, string>>;
}

/** Where the tool finds the files the shim writes: the private work dir, or its mount in the container. */
interface Places {
  readonly workDir: string;
  /** A host path as the tool sees it: itself, or its path inside the container. */
  readonly place: (hostPath: string) => string;
  /** Where the tool may write scratch files: the private dir, or the container's own filesystem. */
  readonly scratch: (name: string) => string;
  /** On the host, where ssh keeps its control sockets when not in the private dir (ssh-control.ts). */
  readonly sshDir: string | undefined;
}

/**
 * Write what the tool needs into the private work dir (0600 files: the
 * inventory, the vars, the wrapper playbook, the SSH key, the kubeconfig),
 * fetch the asset, and build the command. Stops with a ShimError when
 * `signal` was aborted meanwhile (the shim was told to stop).
 *
 * @example
 * const { command, toolEnv } = await prepareInvocation(spec, workDir, process.env, undefined, abort.signal);
 */
export async function prepareInvocation(
  spec: TaskSpec,
  workDir: string,
  env: NodeJS.ProcessEnv,
  container: ContainerTarget | undefined,
  signal: AbortSignal,
  sshDir?: string,
): Promise<Invocation> {
  const places: Places = {
    workDir,
    sshDir: container === undefined ? sshDir : undefined,
    place: (hostPath) =>
      container === undefined ? hostPath : orShimError(() => containerPath(container, workDir, hostPath)),
    scratch: (name) => (container === undefined ? join(workDir, name) : containerScratch(name)),
  };
  const toolEnv = toolEnvironment(spec, env, container, places);
  if (container?.assetMount !== undefined) {
    // The work dir is mounted read-only, so the engine cannot make the asset mount's mountpoint in it.
    const rel = relative(CONTAINER_WORK_DIR, container.assetMount.container);
    if (rel !== '' && !rel.startsWith('..')) mkdirSync(join(workDir, rel), { recursive: true, mode: 0o700 });
  }
  const command = await toolCommand(spec, env, places, signal);
  if (signal.aborted) throw new ShimError('stopped before the tool ran');
  return { command, toolEnv };
}

function toolEnvironment(
  spec: TaskSpec,
  env: NodeJS.ProcessEnv,
  container: ContainerTarget | undefined,
  { workDir, place, scratch, sshDir }: Places,
): Record<string, string> {
  // The host's ANSIBLE_* are not forwarded into a container: their paths (ANSIBLE_CONFIG, roles) are the host's.
  const toolEnv: Record<string, string> = {};
  // The task spec schema refuses names the shim owns, so the assignments below always win.
  Object.assign(toolEnv, spec.env);
  Object.assign(toolEnv, {
    ANSIBLE_FORCE_COLOR: '0',
    ANSIBLE_NOCOLOR: '1',
    NO_COLOR: '1',
    PYTHONUNBUFFERED: '1',
    ANSIBLE_RETRY_FILES_ENABLED: '0',
    ANSIBLE_LOCAL_TEMP: scratch('ansible-local'),
    // Per-run SSH control sockets: two runs must never share a master authenticated with the other's key.
    ANSIBLE_SSH_CONTROL_PATH_DIR: sshDir ?? scratch('cp'),
  });
  if (spec.kind !== 'vm') {
    // Localhost plays: module files (which carry arguments, secrets included) stay in the private dir.
    toolEnv.ANSIBLE_REMOTE_TEMP = scratch('ansible-remote');
  }
  const kubeconfigEnv = [env.KUBECONFIG, env.K8S_AUTH_KUBECONFIG].find((v) => v !== undefined && v !== '');
  // In a container a host path means nothing: its content is copied into the mount like inline content.
  const kubeconfig =
    kubeconfigEnv === undefined || kubeconfigEnv.includes('\n') || container === undefined
      ? kubeconfigEnv
      : readKubeconfigFile(kubeconfigEnv);
  if (kubeconfig?.includes('\n')) {
    const file = join(workDir, 'kubeconfig');
    writePrivateFile(file, kubeconfig);
    toolEnv.KUBECONFIG = place(file);
    toolEnv.K8S_AUTH_KUBECONFIG = place(file);
  }
  return toolEnv;
}

async function toolCommand(
  spec: TaskSpec,
  env: NodeJS.ProcessEnv,
  { workDir, place }: Places,
  signal: AbortSignal,
): Promise<ToolCommand> {
  const assetDir = join(workDir, 'asset');
  if (spec.kind === 'k8s_op') {
    const op = spec.operation;
    if (op === undefined) throw new ShimError('a k8s_op run needs an operation');
    const assetPath = k8sNeedsAsset(op, spec.assetType)
      ? await resolveAsset(spec, assetDir, env, signal)
      : undefined;
    return k8sCommand(op, assetPath === undefined ? undefined : place(assetPath));
  }
  const keyVars: string[] = [];
  if (spec.sshKeyEnv !== undefined) {
    const keyFile = join(workDir, 'ssh-key');
    writePrivateFile(keyFile, sshKeyFileText(env[spec.sshKeyEnv] ?? ''));
    // On the command line, so it outranks an inventory or extra-vars value; the path is no secret.
    keyVars.push('-e', JSON.stringify({ ansible_ssh_private_key_file: place(keyFile) }));
  }
  const assetPath = place(await resolveAsset(spec, assetDir, env, signal));
  const inventoryFile = join(workDir, 'inventory.json');
  if (spec.assetType === 'playbook') {
    writePrivateFile(inventoryFile, JSON.stringify(spec.inventory));
    const extraVarsFile = join(workDir, 'extra-vars.json');
    const vars = { ...spec.extraVars, ...secretPlayVars(spec, env) };
    writePrivateFile(extraVarsFile, JSON.stringify(vars));
    return {
      tool: 'ansible-playbook',
      args: ['-i', place(inventoryFile), '-e', `@${place(extraVarsFile)}`, ...keyVars, assetPath],
    };
  }
  const connectionSecrets = secretPlayVars(spec, env, isConnectionVar);
  const inventory = {
    all: { ...spec.inventory.all, vars: { ...spec.inventory.all.vars, ...connectionSecrets } },
  };
  writePrivateFile(inventoryFile, JSON.stringify(inventory));
  const wrapperFile = join(workDir, 'wrapper.yml');
  const wrapper = wrapperPlaybook(spec.assetType, assetPath, {
    disableGpgCheck: env.RW_RPM_DISABLE_GPG_CHECK === 'true',
  });
  writePrivateFile(wrapperFile, wrapper);
  return { tool: 'ansible-playbook', args: ['-i', place(inventoryFile), ...keyVars, place(wrapperFile)] };
}

/** The command as the shim prints it: shell-quoted where a word needs it (never a secret: those are in files). */
export function commandLine(tool: string, args: readonly string[]): string {
  return [tool, ...args].map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : shellQuote(a))).join(' ');
}
