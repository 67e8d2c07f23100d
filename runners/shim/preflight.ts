/**
 * Before the shim fetches an asset or writes a secret file: does this image
 * have what the run needs? A runner image is a setting, so an operator can
 * point a runner at any image; one without the tool would otherwise fail
 * with a bare spawn error after the download, and one without pywinrm would
 * fail deep inside Ansible, per host, with a message about the connection
 * plugin. Here it fails first, with the reason and the way out.
 *
 * - every playbook / script / package run needs `ansible-playbook` on PATH;
 * - a `k8s_op` needs `kubectl` (apply, delete, get_secret) or `helm` (repo add, upgrade);
 * - a run with a WinRM host needs pywinrm importable by the Python that runs
 *   `ansible-playbook` (its shebang's interpreter: the connection plugin runs
 *   on the controller, so the target's interpreter does not matter).
 *
 * Exit code 127, as for a tool the shim cannot start.
 *
 * @example
 * await preflight(spec, process.env.PATH); // throws ShimError(…, 127) naming what is missing
 */
import { spawn } from 'node:child_process';
import { accessSync, closeSync, constants, openSync, readSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import type { K8sOperation } from '../../shared/domain/run.ts';
import { SHIM_EXIT } from '../../shared/domain/shim-protocol.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';

/** The shim's exit code for "the image lacks what the run needs" (the shell's "command not found"). */
export const EXIT_MISSING = SHIM_EXIT.notFound;

/** The seeds' wording, kept so operators find it in the runner documentation. */
export const PYWINRM_MISSING = 'pywinrm is not installed';

const IMPORT_TIMEOUT_MS = 15_000;

export class PreflightError extends Error {
  readonly exitCode = EXIT_MISSING;
  constructor(message: string) {
    super(message);
    this.name = 'PreflightError';
  }
}

export type Tool = 'ansible-playbook' | 'kubectl' | 'helm';

/** The tool a run starts: the same choice runners/shim/main.ts makes when it builds the command. */
export function toolFor(spec: Pick<TaskSpec, 'kind' | 'operation'>): Tool {
  if (spec.kind !== 'k8s_op') return 'ansible-playbook';
  const action: K8sOperation['action'] | undefined = spec.operation?.action;
  return action === 'helm_repo_add' || action === 'helm_upgrade' ? 'helm' : 'kubectl';
}

/** Whether any host (or the group, or an extra var) connects over WinRM. */
export function usesWinrm(spec: Pick<TaskSpec, 'kind' | 'inventory' | 'extraVars'>): boolean {
  if (spec.kind === 'k8s_op') return false;
  const isWinrm = (vars: Readonly<Record<string, unknown>> | undefined): boolean =>
    vars?.ansible_connection === 'winrm';
  return (
    isWinrm(spec.extraVars) ||
    isWinrm(spec.inventory.all.vars) ||
    Object.values(spec.inventory.all.hosts).some(isWinrm)
  );
}

/** The first executable regular file named `name` in the directories of `path`, as a shell's lookup finds it. */
export function findOnPath(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (dir === '' || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not there, or not executable: keep looking, as execvp does.
    }
  }
  return undefined;
}

/**
 * The interpreter a script's `#!` line names (`/usr/bin/python3`, or the
 * program after `/usr/bin/env`, looked up on `path`); undefined for a binary
 * or a script without one.
 */
export function shebangInterpreter(file: string, path: string | undefined): string | undefined {
  const head = Buffer.alloc(256);
  let length: number;
  const fd = openSync(file, 'r');
  try {
    length = readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  const firstLine = head.subarray(0, length).toString('utf8').split('\n')[0] ?? '';
  if (!firstLine.startsWith('#!')) return undefined;
  const [program, ...args] = firstLine.slice(2).trim().split(/\s+/);
  if (program === undefined || program === '') return undefined;
  if (program.endsWith('/env')) {
    const named = args.find((a) => !a.startsWith('-'));
    return named === undefined ? undefined : findOnPath(named, path);
  }
  return program;
}

/** Whether `python -c 'import winrm'` succeeds; rejects when the interpreter cannot be started. */
function canImportWinrm(python: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, ['-c', 'import winrm'], {
      env,
      stdio: 'ignore',
      timeout: IMPORT_TIMEOUT_MS,
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code === 0));
  });
}

/**
 * Throws a {@link PreflightError} naming what the image lacks for this run;
 * resolves when it has everything. `env` is the tool's environment (PATH is
 * the shim's own: a spec may not set it).
 */
export async function preflight(spec: TaskSpec, env: NodeJS.ProcessEnv): Promise<void> {
  const tool = toolFor(spec);
  const found = findOnPath(tool, env.PATH);
  if (found === undefined) {
    const what = spec.kind === 'k8s_op' ? `a k8s_op (${spec.operation?.action}) run` : `a ${spec.kind} run`;
    throw new PreflightError(
      `${tool} is not installed in this image (not found on PATH ${env.PATH ?? '(unset)'}): ` +
        `${what} needs it; use a Remote Worker runner image (runners/) or one that has ${tool}`,
    );
  }
  if (!usesWinrm(spec)) return;
  const python = shebangInterpreter(found, env.PATH) ?? findOnPath('python3', env.PATH);
  if (python === undefined) {
    throw new PreflightError(
      `${PYWINRM_MISSING}: cannot tell which Python runs ${found} (no #! line and no python3 on PATH), ` +
        'and a WinRM host needs pywinrm there',
    );
  }
  const importable = await canImportWinrm(python, env).catch((error: Error) => {
    throw new PreflightError(
      `${PYWINRM_MISSING}: the Python that runs ${found} (${python}) cannot be started: ${error.message}`,
    );
  });
  if (!importable) {
    throw new PreflightError(
      `${PYWINRM_MISSING} for ${python}, the Python that runs ${found}: a WinRM host needs it. ` +
        'Use an image with pywinrm (the default ansible_local_image, runners/ansible-winrm) or install it there',
    );
  }
}
