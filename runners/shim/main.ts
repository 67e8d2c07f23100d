/**
 * Remote Worker task shim: the entrypoint of every runner image and, in the
 * relay's `process` and `docker` executors, a child of the relay. It turns a TaskSpec into
 * one tool invocation (ansible-playbook, kubectl or helm), runs it, and writes
 * the tool's output — redacted — to its own stdout.
 *
 * Depends on Node built-ins, shared/domain and zod/mini (the task spec's
 * schema) only — plus the Secrets Manager SDK, loaded only when
 * RW_SECRET_REFS names something to fetch — so it bundles to one file:
 *   esbuild runners/shim/main.ts --bundle --platform=node --format=esm --outfile=dist/shim.mjs
 *
 * Environment contract:
 * - `RW_TASK` (the TaskSpec as JSON) or `RW_TASK_FILE` (a path to it). Required.
 * - Each `spec.secretVars[i].env`: a secret value. It becomes play variable
 *   `spec.secretVars[i].var`, is redacted from all output, and is removed from
 *   the tool's environment.
 * - Each name in `spec.secretEnvNames` (`PORTAINER_API_TOKEN`, `KUBECONFIG`):
 *   a secret the tool reads from its environment under that very name. It
 *   stays in the tool's environment and is redacted from all output. A listed
 *   variable that is not set stops the shim before the tool runs.
 * - `spec.sshKeyEnv`: the variable holding an SSH private key. The key is
 *   written to a 0600 file in the private work dir (with the final newline
 *   OpenSSH insists on, and LF line ends), ansible-playbook gets
 *   `-e {"ansible_ssh_private_key_file": <that file>}`, the variable is removed
 *   from the tool's environment, and the key and each of its lines are
 *   redacted. kubectl and helm get no key file.
 * - `spec.env`: non-secret variables exported to the tool (`PORTAINER_URL`).
 *   They may not set `PATH`, any `RW_*` variable, a variable the shim sets
 *   for the tool (`ANSIBLE_LOCAL_TEMP`, `NO_COLOR`, …) or a secret's variable:
 *   such a spec is refused (exit 125).
 * - `RW_SECRET_REFS` (optional, JSON `{ "<env>": "<secret ARN or name>" }`):
 *   per-run secrets (minted at launch, or passwords submitted with the run)
 *   which the shim reads itself with Secrets Manager GetSecretValue (the task
 *   role) into those variables before anything else reads the environment;
 *   from then on they are treated exactly like the variables above.
 * - `RW_REDACT_ENV` (optional): comma-separated names of further variables
 *   whose values are redacted but stay in the tool's environment; the older
 *   way of saying `secretEnvNames`.
 * - `KUBECONFIG` / `K8S_AUTH_KUBECONFIG`: a path, or the kubeconfig itself
 *   (any value with a newline), which is then written to a 0600 file in the
 *   private work dir and both variables point at it. Kubeconfig content is
 *   always a secret, listed or not: it is redacted whole, line by line, and
 *   so are the credentials inside it (tokens, passwords, client keys).
 * - `RW_CONTAINER` (optional, JSON, see container.ts): container mode, used by
 *   the relay's docker executor. The shim stays on the host and runs only the
 *   tool, in `docker run … IMAGE`: its private work dir mounted read-only at
 *   /ansible, paths rewritten, secret env as 0600 files there, no engine log.
 * - `RW_RESULT_DIR` (optional): where `exit.json` (`{ exitCode, signal,
 *   endedAt, reason? }`) is written last, so a supervisor that lost the
 *   process can still learn the outcome.
 * - `RW_TMP_DIR` (optional, default the OS temp dir): parent of the private
 *   work dir; the process executor points it into the run's work dir so even a
 *   SIGKILLed shim leaves nothing outside it. Only SSH's control sockets
 *   leave it when it is too deep for a Unix socket's path (ssh-control.ts):
 *   a dir of their own under the OS temp dir, removed at the end.
 * - `RW_ASSET_MAX_BYTES` (default 256 MiB), `RW_ASSET_TIMEOUT_MS` (default
 *   300000): limits for `url` assets. `RW_KILL_GRACE_MS` (default 5000): after
 *   forwarding SIGTERM, how long the tool gets before SIGKILL, so the shim can
 *   still clean up inside its supervisor's own grace period.
 * - `RW_RPM_DISABLE_GPG_CHECK=true` (optional): `.rpm` wrappers skip GPG checks.
 * - `ANSIBLE_HOST_KEY_CHECKING` is deliberately not set: Ansible's default
 *   (check) stands unless the operator passes it, since turning it off
 *   silently would hide a man-in-the-middle.
 *
 * Output: the tool's stdout and stderr, line by line, through one redactor
 * each (built before the tool starts); lines the shim writes itself start
 * with `remote-worker: ` and are redacted too. If a redactor throws, that
 * stream's output is withheld from then on, never passed through: the shim
 * writes `remote-worker: output withheld: the redactor failed` in its place.
 *
 * Exit code: the tool's; 128 + n when it died of signal n; 124 after the
 * spec's timeout; 125 when the shim failed before the tool ran; 127 when the
 * tool could not be started. The last output line says which.
 *
 * The pieces: spec.ts (reading and checking the spec), secrets.ts (what is
 * redacted and handed over), invocation.ts (the files and the command),
 * asset.ts (the download), tool-process.ts (starting the tool, in a container
 * or not), lines.ts (redacted line piping), run-tool.ts (one run of the tool),
 * stopping.ts (signals and the timeout), outcome.ts (the exit code and record).
 */
import { chmodSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type CompiledRedaction, compileRedaction, REDACTOR_FAILED } from '../../shared/domain/redaction.ts';
import { SHIM_EXIT, SHIM_PREFIX } from '../../shared/domain/shim-protocol.ts';
import { positiveInt } from './env.ts';
import { ShimError } from './errors.ts';
import { writeExitRecord } from './files.ts';
import { failureOutcome, type Outcome, toolOutcome } from './outcome.ts';
import { PreflightError, preflight } from './preflight.ts';
import { runTool } from './run-tool.ts';
import { withFetchedSecrets } from './secret-fetch.ts';
import { requireSecretEnv, secretValues } from './secrets.ts';
import { parseTaskSpec, taskSpecText } from './spec.ts';
import { closeSshMasters, type SshControlDir, sshControlDir } from './ssh-control.ts';
import { ToolStopping } from './stopping.ts';

/**
 * Run one task; resolves with the exit code. Output goes through `write`
 * (default: stdout). Exported for tests; the entry point calls it.
 */
export async function runShim(
  env: NodeJS.ProcessEnv = process.env,
  write: (text: string) => void = (text) => process.stdout.write(text),
): Promise<number> {
  // Until the spec is read there is no secret to redact; if the redaction cannot be built, every message is withheld.
  let redact: (text: string) => string = (text) => text;
  const redactMessage = (message: string): string => {
    try {
      return redact(message);
    } catch {
      return REDACTOR_FAILED;
    }
  };
  const say = (message: string): void => write(`${SHIM_PREFIX}${redactMessage(message)}\n`);
  const stopping = new ToolStopping(positiveInt(env.RW_KILL_GRACE_MS, 5000), say).listen();

  let workDir: string | undefined;
  let ssh: SshControlDir | undefined;
  let outcome: Outcome;
  try {
    const spec = parseTaskSpec(taskSpecText(env));
    // Per-run secrets the launcher could only name (RW_SECRET_REFS): fetched before anything reads the env.
    const taskEnv = await withFetchedSecrets(env);
    const secrets = secretValues(spec, taskEnv);
    let compiled: CompiledRedaction;
    try {
      compiled = compileRedaction(secrets);
    } catch {
      redact = () => {
        throw new Error('no redactor');
      };
      throw new ShimError('the redactor could not be built');
    }
    redact = (text) => compiled.redact(text);
    requireSecretEnv(spec, taskEnv);
    // Before any download or secret file: an image without the tool (or pywinrm) stops here, exit 127.
    // In container mode the tool is in the container, not on this host: its prologue checks it (127).
    const onHost = env.RW_CONTAINER === undefined || env.RW_CONTAINER === '';
    await (onHost ? preflight(spec, taskEnv) : Promise.resolve()).catch((error: unknown) => {
      throw error instanceof PreflightError ? new ShimError(error.message, error.exitCode) : error;
    });

    workDir = mkdtempSync(join(env.RW_TMP_DIR ?? tmpdir(), 'rw-task-'));
    chmodSync(workDir, 0o700);
    // In container mode the sockets are in the container's own filesystem (invocation.ts).
    if (onHost) ssh = sshControlDir(workDir);
    const result = await runTool(
      spec,
      workDir,
      taskEnv,
      compiled,
      { say, write, signal: stopping.signal, stop: stopping.stop, started: stopping.started },
      ssh?.dir,
    );
    outcome = toolOutcome(result, spec.timeoutSeconds, stopping.received);
    say(
      result.code !== null
        ? `${result.tool} exited with code ${result.code}`
        : `${result.tool} was stopped by ${result.signal ?? 'a signal'}`,
    );
  } catch (error) {
    const shimError =
      error instanceof ShimError
        ? error
        : new ShimError(`unexpected failure: ${(error as Error).stack ?? String(error)}`);
    const message = redactMessage(shimError.message);
    outcome = failureOutcome(shimError.exitCode, message, stopping.received);
    say(message);
    say(`failed before the tool could finish (exit code ${outcome.exitCode})`);
  } finally {
    stopping.dispose();
    // Before the sockets go with their dir: Ansible's masters would hold their connections for another minute.
    if (ssh !== undefined) await closeSshMasters(ssh.dir);
    if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
    if (ssh?.apart === true) rmSync(ssh.dir, { recursive: true, force: true });
  }
  if (env.RW_RESULT_DIR !== undefined && env.RW_RESULT_DIR !== '') {
    try {
      writeExitRecord(env.RW_RESULT_DIR, outcome.record);
    } catch (error) {
      say(`could not write exit.json: ${(error as Error).message}`);
    }
  }
  return outcome.exitCode;
}

const isEntryPoint = (() => {
  const main = process.argv[1];
  if (main === undefined) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(main)).href;
  } catch {
    return false;
  }
})();

if (isEntryPoint) {
  runShim().then(
    (code) => process.exit(code),
    (error: unknown) => {
      // Only the error's class: this is outside runShim, where nothing could redact its message.
      process.stdout.write(`${SHIM_PREFIX}unexpected failure (${(error as Error)?.name ?? typeof error})\n`);
      process.exit(SHIM_EXIT.shimFailed);
    },
  );
}
