/**
 * What the task shim (runners/shim) and the control plane both speak: the
 * prefix of the lines the shim writes itself, its exit codes, the exit record
 * it leaves for a supervisor, the variables a spec may not set, and where
 * its work dir appears in a container (the container target itself:
 * container-target.ts). The shim writes these and
 * the executors, launchers and log readers parse them, so each lives here
 * once. Pure: no I/O, no dependency outside the language.
 *
 * @example
 * shimLineStream('remote-worker: ansible-playbook exited with code 0'); // 'system'
 * parseExitRecord('{"exitCode":2,"signal":null,"endedAt":"…"}'); // { exitCode: 2 }
 */

/**
 * Prefix of every line the shim writes itself. Launchers and executors ship
 * such lines as `system`, everything else the tool printed as `stdout`.
 */
export const SHIM_PREFIX = 'remote-worker: ';

/** The stream a line of a task's output belongs to: the shim's own lines are `system`. */
export const shimLineStream = (text: string): 'system' | 'stdout' =>
  text.startsWith(SHIM_PREFIX) ? 'system' : 'stdout';

/** The shim's own exit codes; any other is the tool's, or 128 + n for death by signal n. */
export const SHIM_EXIT = {
  /** The spec's timeout passed and the tool was stopped. */
  timedOut: 124,
  /** The shim failed before the tool ran (a bad spec, a missing secret, a failed download). */
  shimFailed: 125,
  /** The tool could not be started (not on PATH, or the image lacks what the run needs). */
  notFound: 127,
} as const;

/** Written last in `RW_RESULT_DIR`, so a supervisor that lost the process still learns the outcome. */
export const EXIT_FILE = 'exit.json';

/** The content of {@link EXIT_FILE}. */
export interface ExitRecord {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly endedAt: string;
  readonly reason?: string;
}

/** An exit record's outcome: its exit code, or the signal that ended the tool; undefined when unreadable. */
export function parseExitRecord(text: string): { exitCode: number } | { signal: string } | undefined {
  let record: unknown;
  try {
    record = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof record !== 'object' || record === null) return undefined;
  const { exitCode, signal } = record as { exitCode?: unknown; signal?: unknown };
  if (typeof exitCode === 'number') return { exitCode };
  if (typeof signal === 'string') return { signal };
  return undefined;
}

/** What the shim sets in the tool's environment itself; a spec's `env` may not set these (nor any `RW_*`). */
export const SHIM_SET_ENV: ReadonlySet<string> = new Set([
  'PATH',
  'ANSIBLE_FORCE_COLOR',
  'ANSIBLE_NOCOLOR',
  'NO_COLOR',
  'PYTHONUNBUFFERED',
  'ANSIBLE_RETRY_FILES_ENABLED',
  'ANSIBLE_LOCAL_TEMP',
  'ANSIBLE_REMOTE_TEMP',
  'ANSIBLE_SSH_CONTROL_PATH_DIR',
]);

/** Whether the shim owns the variable: `RW_*` and the ones in {@link SHIM_SET_ENV}. */
export const isShimOwnedEnv = (name: string): boolean => name.startsWith('RW_') || SHIM_SET_ENV.has(name);

/** Where the shim's private work dir appears inside a task container (the seeds: "bind-mounted into /ansible/"). */
export const CONTAINER_WORK_DIR = '/ansible';
