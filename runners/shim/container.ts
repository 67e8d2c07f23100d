/**
 * Container mode of the task shim: the shim stays on the relay host and runs
 * only the tool inside `docker run … IMAGE <tool> <args>`, so the image needs
 * nothing of ours — any image with the tool on its PATH works.
 *
 * The shim's private work dir (inventory, vars files, wrapper playbook, SSH
 * key, kubeconfig, secret env files: all 0600) is bind-mounted read-only at
 * `/ansible`, the asset directory read-only at `/ansible/assets`. Secrets
 * never appear in the container's configuration (`docker inspect`) or on a
 * command line: play variables reach ansible through `@/ansible/extra-vars.json`,
 * and secret environment variables through files that a `/bin/sh` prologue
 * inside the container exports before it `exec`s the tool. The container logs
 * nothing to the engine (`--log-driver none`): its output reaches the shim's
 * redactor through the CLI's pipes and nowhere else, so no engine log file
 * ever holds a secret unredacted.
 *
 * Depends on Node built-ins and shared/domain only (the shim bundles to one file).
 */
import { spawn } from 'node:child_process';
import { relative, sep } from 'node:path';
import type { ContainerTarget } from '../../shared/domain/container-target.ts';
import { CONTAINER_WORK_DIR, SHIM_EXIT, SHIM_PREFIX } from '../../shared/domain/shim-protocol.ts';

/** Secret environment files, relative to the work dir. */
export const SECRET_ENV_DIR = 'env';
/** Writable scratch for the tool inside the container's own filesystem, gone with the container. */
const CONTAINER_TMP = '/tmp/remote-worker';

/**
 * A host path as the container sees it: under the work dir → `/ansible/…`,
 * under the asset mount → its container path. Anything else is not mounted,
 * and the tool would fail on it in a confusing way, so it is refused.
 */
export function containerPath(target: ContainerTarget, workDir: string, hostPath: string): string {
  const under = (root: string, inside: string): string | undefined => {
    const rel = relative(root, hostPath);
    if (rel === '') return inside;
    if (rel.startsWith('..') || rel.startsWith(sep)) return undefined;
    return `${inside}/${rel.split(sep).join('/')}`;
  };
  const mapped =
    under(workDir, CONTAINER_WORK_DIR) ??
    (target.assetMount === undefined
      ? undefined
      : under(target.assetMount.host, target.assetMount.container));
  if (mapped === undefined)
    throw new Error(`${hostPath} is not inside a directory mounted into the container`);
  return mapped;
}

/** The tool's scratch directories inside the container (not in the read-only mount). */
export const containerScratch = (name: string): string => `${CONTAINER_TMP}/${name}`;

/**
 * The container's command: exports each `/ansible/env/NAME` file as `$NAME`
 * (keeping trailing newlines: `$(cat …; printf x)`, then strip the x), says
 * so and exits 127 when the tool is not on the image's PATH (an init such as
 * catatonit would report a failed exec as 1), then becomes the tool. The
 * script holds names only; values stay in the files. Any image that can run
 * an Ansible play has `/bin/sh`: Ansible's own modules run through it.
 */
const PROLOGUE = [
  `for f in ${CONTAINER_WORK_DIR}/${SECRET_ENV_DIR}/*; do [ -f "$f" ] || continue; v=$(cat "$f"; printf x); export "\${f##*/}=\${v%x}"; done`,
  `command -v "$1" >/dev/null 2>&1 || { echo "${SHIM_PREFIX}$1 is not on the PATH of the image" >&2; exit ${SHIM_EXIT.notFound}; }`,
  'exec "$@"',
].join('; ');

/**
 * The `docker run` argv (after the CLI's name) that runs `tool args` in the
 * container with `env` (non-secret values only: they are part of the
 * container's configuration) behind the prologue that reads the secret env
 * files the shim wrote.
 */
export function dockerRunArgs(
  target: ContainerTarget,
  workDir: string,
  tool: string,
  args: readonly string[],
  env: Readonly<Record<string, string>>,
): string[] {
  if (workDir.includes(':'))
    throw new Error(`cannot bind-mount ${workDir}: a ':' in the path breaks docker's -v syntax`);
  return [
    'run',
    '--rm',
    '--name',
    target.name,
    ...target.runArgs,
    '--log-driver',
    'none',
    '-v',
    `${workDir}:${CONTAINER_WORK_DIR}:ro`,
    '-w',
    CONTAINER_WORK_DIR,
    ...Object.entries(env).flatMap(([name, value]) => ['-e', `${name}=${value}`]),
    // Whatever entrypoint the image has, the container runs exactly this.
    '--entrypoint',
    '/bin/sh',
    target.image,
    '-c',
    PROLOGUE,
    'sh',
    tool,
    ...args,
  ];
}

/** Run the CLI once for a side effect (stop, rm); resolves with its exit code, never rejects. */
export function containerCommand(
  target: ContainerTarget,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(target.bin, args, { env, stdio: 'ignore' });
    child.once('error', () => resolve(null));
    child.once('close', (code) => resolve(code));
  });
}
