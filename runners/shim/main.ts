/**
 * Remote Worker task shim: the entrypoint of every runner image and, in the
 * relay's `process` and `docker` executors, a child of the relay. It turns a TaskSpec into
 * one tool invocation (ansible-playbook, kubectl or helm), runs it, and writes
 * the tool's output — redacted — to its own stdout.
 *
 * Depends on Node built-ins and shared/domain only, so it bundles to one file:
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
 *   SIGKILLed shim leaves nothing outside it.
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
 */
import { type ChildProcess, type ChildProcessByStdio, spawn } from 'node:child_process';
import {
  chmodSync,
  writeFileSync as fsWriteFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { stat, writeFile } from 'node:fs/promises';
import { constants, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { pathToFileURL } from 'node:url';
import { isEnvName } from '../../shared/domain/env-name.ts';
import {
  type CompiledRedaction,
  compileRedaction,
  kubeconfigSecrets,
  plaintextPasswords,
  REDACTOR_FAILED,
  type Redactor,
  safeRedactor,
} from '../../shared/domain/redaction.ts';
import type { K8sOperation, RunKind } from '../../shared/domain/run.ts';
import {
  CONTAINER_WORK_DIR,
  type ContainerTarget,
  EXIT_FILE,
  type ExitRecord,
  isShimOwnedEnv,
  SHIM_EXIT,
  SHIM_PREFIX,
} from '../../shared/domain/shim-protocol.ts';
import type { AssetType, TaskSpec } from '../../shared/domain/task.ts';
import { shellQuote, wrapperPlaybook } from '../../shared/domain/wrappers.ts';
import {
  containerCommand,
  containerPath,
  containerScratch,
  dockerRunArgs,
  parseContainerTarget,
  SECRET_ENV_DIR,
} from './container.ts';
import { PreflightError, preflight } from './preflight.ts';

const EXIT_TIMED_OUT = SHIM_EXIT.timedOut;
const EXIT_SHIM_FAILED = SHIM_EXIT.shimFailed;
const EXIT_NOT_FOUND = SHIM_EXIT.notFound;
/** A line longer than this is cut: one giant JSON blob must not hold all output in memory. */
const MAX_LINE_CHARS = 64 * 1024;
/** After the tool exits, how long inherited pipes may stay open (a straggling worker) before we stop reading. */
const CLOSE_WAIT_MS = 2000;

export class ShimError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT_SHIM_FAILED,
  ) {
    super(message);
    this.name = 'ShimError';
  }
}

// ---------------------------------------------------------------- spec

const RUN_KIND_SET: ReadonlySet<string> = new Set([
  'vm',
  'cluster_play',
  'database_play',
  'k8s_op',
  'portainer',
] satisfies RunKind[]);
const ASSET_TYPE_SET: ReadonlySet<string> = new Set([
  'playbook',
  'script',
  'powershell',
  'rpm',
  'deb',
] satisfies AssetType[]);

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Check the spec's shape. The API validated it with zod already; the shim
 * checks again (without zod, to stay dependency-free) because it may be
 * started by hand or by an older control plane.
 */
export function parseTaskSpec(text: string): TaskSpec {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ShimError(`the task spec is not valid JSON: ${(error as Error).message}`);
  }
  const problems: string[] = [];
  if (!isRecord(raw)) throw new ShimError('the task spec must be a JSON object');
  if (typeof raw.runId !== 'string' || raw.runId === '') problems.push('runId must be a non-empty string');
  if (typeof raw.kind !== 'string' || !RUN_KIND_SET.has(raw.kind)) problems.push('kind is not a run kind');
  const asset = raw.asset;
  if (
    !isRecord(asset) ||
    !(
      (asset.kind === 'file' && typeof asset.path === 'string' && asset.path !== '') ||
      (asset.kind === 'url' && typeof asset.url === 'string')
    )
  ) {
    problems.push("asset must be { kind: 'file', path } or { kind: 'url', url }");
  }
  if (typeof raw.assetType !== 'string' || !ASSET_TYPE_SET.has(raw.assetType)) {
    problems.push('assetType is not an asset type');
  }
  if (!isRecord(raw.inventory) || !isRecord(raw.inventory.all) || !isRecord(raw.inventory.all.hosts)) {
    problems.push('inventory must be { all: { hosts: { … } } }');
  }
  if (!isRecord(raw.extraVars)) problems.push('extraVars must be an object');
  if (
    !Array.isArray(raw.secretVars) ||
    !raw.secretVars.every(
      (s: unknown) =>
        isRecord(s) &&
        typeof s.var === 'string' &&
        isEnvName(s.var) &&
        typeof s.env === 'string' &&
        isEnvName(s.env),
    )
  ) {
    problems.push('secretVars must be a list of { var, env } with valid names');
  }
  if (
    raw.secretEnvNames !== undefined &&
    !(
      Array.isArray(raw.secretEnvNames) &&
      raw.secretEnvNames.every((n: unknown) => typeof n === 'string' && isEnvName(n))
    )
  ) {
    problems.push('secretEnvNames must be a list of environment variable names');
  }
  if (raw.sshKeyEnv !== undefined && !(typeof raw.sshKeyEnv === 'string' && isEnvName(raw.sshKeyEnv))) {
    problems.push('sshKeyEnv must be an environment variable name');
  }
  if (raw.env !== undefined) {
    const env = raw.env;
    if (!isRecord(env) || !Object.entries(env).every(([k, v]) => isEnvName(k) && typeof v === 'string')) {
      problems.push('env must be an object of NAME: "value" strings');
    } else {
      const owned = Object.keys(env).filter(isShimOwnedEnv);
      if (owned.length > 0) {
        problems.push(
          `env must not set ${owned.join(', ')}: PATH, RW_* and the variables the shim sets for the tool are the shim's own`,
        );
      }
      const secretNames = new Set<unknown>([
        ...(Array.isArray(raw.secretVars)
          ? raw.secretVars.map((s: unknown) => (isRecord(s) ? s.env : undefined))
          : []),
        ...(Array.isArray(raw.secretEnvNames) ? raw.secretEnvNames : []),
        raw.sshKeyEnv,
      ]);
      const shadowing = Object.keys(env).filter((name) => secretNames.has(name));
      if (shadowing.length > 0) {
        problems.push(`env must not set ${shadowing.join(', ')}: a secret arrives in that variable`);
      }
    }
  }
  if (raw.operation !== undefined && !(isRecord(raw.operation) && typeof raw.operation.action === 'string')) {
    problems.push('operation must be an object with an action');
  }
  if (raw.kind === 'k8s_op' && raw.operation === undefined) problems.push('a k8s_op run needs an operation');
  if (typeof raw.timeoutSeconds !== 'number' || !(raw.timeoutSeconds >= 0)) {
    problems.push('timeoutSeconds must be a non-negative number');
  }
  if (problems.length > 0) throw new ShimError(`invalid task spec: ${problems.join('; ')}`);
  return raw as unknown as TaskSpec;
}

// ---------------------------------------------------------------- commands

export interface ToolCommand {
  readonly tool: 'ansible-playbook' | 'kubectl' | 'helm';
  readonly args: readonly string[];
}

/** Names, releases and charts come from a request: one starting with `-` would be read as a flag. */
function positional(value: string, what: string): string {
  if (value === '' || value.startsWith('-'))
    throw new ShimError(`${what} must not be empty or start with "-"`);
  return value;
}

/**
 * Prints the secret's name, type and key names — never its values: run output
 * is stored and shown, and a caller that needs a value should bind it as a
 * secret instead.
 */
const SECRET_SUMMARY_TEMPLATE =
  'go-template=secret {{.metadata.name}} type={{.type}}{{"\\n"}}{{range $k, $v := .data}}key {{$k}}{{"\\n"}}{{end}}';

/**
 * kubectl / helm argv for a k8s operation; no shell is involved.
 * `apply`/`delete` take the asset as a manifest; `helm_upgrade` takes it as a
 * values file when given one.
 */
export function k8sCommand(op: K8sOperation, assetPath: string | undefined): ToolCommand {
  const ns = (namespace: string | undefined): string[] =>
    namespace === undefined ? [] : ['--namespace', positional(namespace, 'namespace')];
  const manifest = (): string => {
    if (assetPath === undefined) throw new ShimError(`${op.action} needs a manifest asset`);
    return assetPath;
  };
  switch (op.action) {
    case 'apply':
      return { tool: 'kubectl', args: ['apply', '-f', manifest(), ...ns(op.namespace)] };
    case 'delete':
      return { tool: 'kubectl', args: ['delete', '-f', manifest(), ...ns(op.namespace)] };
    case 'get_secret':
      return {
        tool: 'kubectl',
        args: [
          'get',
          'secret',
          positional(op.name, 'name'),
          ...ns(op.namespace),
          '-o',
          SECRET_SUMMARY_TEMPLATE,
        ],
      };
    case 'helm_repo_add':
      // --force-update: re-running the same operation must not fail because the repo exists.
      return {
        tool: 'helm',
        args: [
          'repo',
          'add',
          '--force-update',
          positional(op.repoName, 'repoName'),
          positional(op.repoUrl, 'repoUrl'),
        ],
      };
    case 'helm_upgrade':
      return {
        tool: 'helm',
        args: [
          'upgrade',
          '--install',
          positional(op.release, 'release'),
          positional(op.chart, 'chart'),
          ...(op.namespace === undefined ? [] : [...ns(op.namespace), '--create-namespace']),
          ...(op.version === undefined ? [] : ['--version', positional(op.version, 'version')]),
          ...(assetPath === undefined ? [] : ['--values', assetPath]),
        ],
      };
  }
}

/** Whether the operation reads the asset at all (repo add and get secret don't). */
function k8sNeedsAsset(op: K8sOperation, assetType: AssetType): boolean {
  return (
    op.action === 'apply' ||
    op.action === 'delete' ||
    (op.action === 'helm_upgrade' && assetType === 'playbook')
  );
}

// ---------------------------------------------------------------- output

/**
 * Stream → decoder → redactor → whole lines, so a secret split across chunks
 * is still caught. When the redactor throws, the rest of the stream is read
 * and dropped: the line already redacted is written, then one notice line.
 * Exported for tests.
 *
 * @example
 * const out = pipeLines(child.stdout, compiled.redactor(), (line) => write(`${line}\n`));
 * await out.done;
 */
export function pipeLines(
  stream: Readable,
  redactor: Redactor,
  emit: (line: string) => void,
): { done: Promise<void>; finish: () => void } {
  const decoder = new StringDecoder('utf8');
  const safe = safeRedactor(redactor, '');
  let partial = '';
  let finished = false;
  let withheld = false;
  const take = (text: string): void => {
    if (withheld) return;
    if (safe.failed) {
      withheld = true;
      // `partial` holds only what the redactor returned before it failed.
      if (partial !== '') emit(partial);
      partial = '';
      emit(`${SHIM_PREFIX}${REDACTOR_FAILED}`);
      return;
    }
    partial += text;
    let nl = partial.indexOf('\n');
    while (nl >= 0) {
      emit(partial.slice(0, nl).replace(/\r$/, ''));
      partial = partial.slice(nl + 1);
      nl = partial.indexOf('\n');
    }
    while (partial.length > MAX_LINE_CHARS) {
      emit(partial.slice(0, MAX_LINE_CHARS));
      partial = partial.slice(MAX_LINE_CHARS);
    }
  };
  let resolveDone: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    resolveDone = resolve;
  });
  const finish = (): void => {
    if (finished) return;
    finished = true;
    take(safe.push(decoder.end()));
    take(safe.flush());
    if (partial !== '') emit(partial);
    partial = '';
    resolveDone();
  };
  stream.on('data', (chunk: Buffer) => {
    if (!finished) take(safe.push(decoder.write(chunk)));
  });
  stream.on('end', finish);
  stream.on('error', finish);
  return { done, finish };
}

// ---------------------------------------------------------------- asset

function assetFileName(url: URL): string {
  const last = url.pathname.split('/').pop() ?? '';
  const safe = decodeURIComponent(last).replace(/[^A-Za-z0-9._-]/g, '_');
  return safe === '' || safe === '.' || safe === '..' ? 'asset' : safe;
}

async function download(raw: string, dir: string, maxBytes: number, signal: AbortSignal): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ShimError('the asset URL is not a valid URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ShimError(`the asset URL must be http or https, not ${url.protocol}`);
  }
  // Presigned URLs carry credentials in the query: name only origin + path.
  const shown = `${url.origin}${url.pathname}`;
  let response: Response;
  try {
    response = await fetch(url, { signal, redirect: 'follow' });
  } catch (error) {
    throw new ShimError(`could not fetch the asset ${shown}: ${(error as Error).message}`);
  }
  if (!response.ok || response.body === null) {
    throw new ShimError(`could not fetch the asset ${shown}: HTTP ${response.status}`);
  }
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    await response.body.cancel();
    throw new ShimError(`the asset ${shown} is larger than the ${maxBytes}-byte limit`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new ShimError(`the asset ${shown} is larger than the ${maxBytes}-byte limit`);
    }
    chunks.push(value);
  }
  const target = join(dir, assetFileName(url));
  await writeFile(target, Buffer.concat(chunks), { mode: 0o600 });
  return target;
}

async function resolveAsset(spec: TaskSpec, assetDir: string, env: NodeJS.ProcessEnv, signal: AbortSignal) {
  if (spec.asset.kind === 'file') {
    const info = await stat(spec.asset.path).catch(() => undefined);
    if (info === undefined || !info.isFile())
      throw new ShimError(`the asset ${spec.asset.path} is not a file`);
    return spec.asset.path;
  }
  mkdirSync(assetDir, { mode: 0o700 });
  const maxBytes = positiveInt(env.RW_ASSET_MAX_BYTES, 256 * 1024 * 1024);
  const timeout = AbortSignal.timeout(positiveInt(env.RW_ASSET_TIMEOUT_MS, 300_000));
  return download(spec.asset.url, assetDir, maxBytes, AbortSignal.any([signal, timeout]));
}

function positiveInt(raw: string | undefined, fallback: number): number {
  const n = raw === undefined ? Number.NaN : Number(raw);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

// ---------------------------------------------------------------- main

function writeExitRecord(dir: string, record: ExitRecord): void {
  const file = join(dir, EXIT_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  // Rename makes the record appear whole or not at all.
  writePrivateFile(tmp, `${JSON.stringify(record)}\n`);
  renameSync(tmp, file);
}

/** Create a 0600 file; `wx` after removal so an existing file's wider mode is never kept. */
function writePrivateFile(path: string, data: string): void {
  rmSync(path, { force: true });
  fsWriteFileSync(path, data, { mode: 0o600, flag: 'wx' });
}

/** Play variables holding secrets, marked `__ansible_unsafe` so Ansible never templates a value. */
function secretPlayVars(spec: TaskSpec, env: NodeJS.ProcessEnv, only?: (name: string) => boolean) {
  const vars: Record<string, unknown> = {};
  for (const { var: name, env: from } of spec.secretVars) {
    if (only !== undefined && !only(name)) continue;
    const value = env[from];
    if (value === undefined)
      throw new ShimError(`secret variable ${name}: environment variable ${from} is not set`);
    vars[name] = { __ansible_unsafe: value };
  }
  return vars;
}

/**
 * Every secret value this task holds, for the redactor: bound secret vars,
 * secret env, the SSH key, kubeconfig content and the credentials inside it,
 * plaintext password extra vars, and `RW_REDACT_ENV`. Missing variables are
 * skipped here (so the redactor covers whatever is present) and refused by
 * {@link requireSecretEnv} and {@link secretPlayVars}.
 */
function secretValues(spec: TaskSpec, env: NodeJS.ProcessEnv): string[] {
  const fromEnv = (names: readonly string[]): string[] =>
    names.map((name) => env[name]).filter((v): v is string => v !== undefined);
  const kubeconfigs = fromEnv(['KUBECONFIG', 'K8S_AUTH_KUBECONFIG']).filter((v) => v.includes('\n'));
  return [
    ...fromEnv(spec.secretVars.map((s) => s.env)),
    ...fromEnv(spec.secretEnvNames ?? []),
    ...fromEnv(spec.sshKeyEnv === undefined ? [] : [spec.sshKeyEnv]),
    ...kubeconfigs,
    ...kubeconfigs.flatMap(kubeconfigSecrets),
    // A read URL's query is its capability (presigned GET, SAS, V4 signature).
    ...assetUrlCapability(spec),
    // A WinRM password forwarded as a plain extra var (local runner only) is still a secret.
    ...plaintextPasswords(spec.extraVars),
    ...fromEnv(redactEnvNames(env)),
  ];
}

/** The signed query of a `url` asset, and the signature alone, for the redactor. */
function assetUrlCapability(spec: TaskSpec): string[] {
  if (spec.asset.kind !== 'url') return [];
  try {
    const url = new URL(spec.asset.url);
    const signatures = ['X-Amz-Signature', 'X-Goog-Signature', 'sig']
      .map((name) => url.searchParams.get(name))
      .filter((v): v is string => v !== null);
    return url.search.length > 1 ? [url.search.slice(1), ...signatures] : signatures;
  } catch {
    return [];
  }
}

function redactEnvNames(env: NodeJS.ProcessEnv): string[] {
  return (env.RW_REDACT_ENV ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}

/** The secret env the spec promises must be there: a tool run without its credentials fails in confusing ways. */
function requireSecretEnv(spec: TaskSpec, env: NodeJS.ProcessEnv): void {
  const missing = (spec.secretEnvNames ?? []).filter((name) => env[name] === undefined);
  if (missing.length > 0) throw new ShimError(`secret environment ${missing.join(', ')} is not set`);
  if (spec.sshKeyEnv !== undefined && (env[spec.sshKeyEnv] ?? '').trim() === '') {
    throw new ShimError(`the SSH key variable ${spec.sshKeyEnv} is not set`);
  }
}

/** The key as OpenSSH reads it: LF line ends and a final newline (without one it reports "invalid format"). */
function sshKeyFileText(key: string): string {
  const lf = key.replace(/\r\n?/g, '\n');
  return lf.endsWith('\n') ? lf : `${lf}\n`;
}

/**
 * Wrappers get no extra vars and only the secret vars Ansible itself reads
 * (`ansible_password`, `ansible_become_password`, …): a wrapper references no
 * variable, but a `.ps1` over WinRM cannot even connect without its password.
 */
const isConnectionVar = (name: string): boolean => name.startsWith('ansible_');

function commandLine(tool: string, args: readonly string[]): string {
  return [tool, ...args].map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : shellQuote(a))).join(' ');
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

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

  let child: ChildProcess | undefined;
  /** Set in container mode: signals go to the container through the engine, not to the CLI process. */
  let stopTool: ((signal: NodeJS.Signals) => void) | undefined;
  let received: NodeJS.Signals | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  const abort = new AbortController();
  const signalTool = (signal: NodeJS.Signals): void => {
    if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    if (stopTool !== undefined) {
      stopTool(signal);
      return;
    }
    // The tool leads its own process group: Ansible's forked workers outlive a
    // signal sent to the main process alone.
    try {
      process.kill(-child.pid, signal);
    } catch {
      child.kill(signal);
    }
  };
  /** Stop the tool: SIGTERM now, SIGKILL after the grace, so cleanup still runs inside the supervisor's grace. */
  const stop = (signal: NodeJS.Signals): void => {
    abort.abort();
    signalTool(signal);
    if (killTimer === undefined && child !== undefined) {
      killTimer = setTimeout(() => signalTool('SIGKILL'), positiveInt(env.RW_KILL_GRACE_MS, 5000));
    }
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (received === undefined) {
      received = signal;
      say(`received ${signal}; stopping`);
    }
    stop(signal);
  };
  for (const s of SIGNALS) process.on(s, onSignal);

  let workDir: string | undefined;
  let record: ExitRecord;
  let exitCode: number;
  try {
    const specText =
      env.RW_TASK ??
      (env.RW_TASK_FILE === undefined
        ? undefined
        : (() => {
            try {
              return readFileSync(env.RW_TASK_FILE, 'utf8');
            } catch (error) {
              throw new ShimError(`cannot read RW_TASK_FILE: ${(error as Error).message}`);
            }
          })());
    if (specText === undefined) throw new ShimError('set RW_TASK or RW_TASK_FILE');
    const spec = parseTaskSpec(specText);
    const secrets = secretValues(spec, env);
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
    requireSecretEnv(spec, env);
    // Before any download or secret file: an image without the tool (or pywinrm) stops here, exit 127.
    // In container mode the tool is in the container, not on this host: its prologue checks it (127).
    await (env.RW_CONTAINER === undefined || env.RW_CONTAINER === ''
      ? preflight(spec, env)
      : Promise.resolve()
    ).catch((error: unknown) => {
      throw error instanceof PreflightError ? new ShimError(error.message, error.exitCode) : error;
    });

    workDir = mkdtempSync(join(env.RW_TMP_DIR ?? tmpdir(), 'rw-task-'));
    chmodSync(workDir, 0o700);
    const result = await runTool(spec, workDir, env, compiled, {
      say,
      write,
      signal: abort.signal,
      stop,
      started: (c, stopper) => {
        child = c;
        stopTool = stopper;
        if (received !== undefined) stop(received);
      },
    });
    const signalled = received !== undefined;
    if (result.timedOut) {
      exitCode = EXIT_TIMED_OUT;
      record = {
        exitCode: result.code,
        signal: result.signal,
        endedAt: new Date().toISOString(),
        reason: `timed out after ${spec.timeoutSeconds}s`,
      };
    } else if (result.code !== null) {
      exitCode = result.code;
      record = { exitCode: result.code, signal: null, endedAt: new Date().toISOString() };
    } else {
      const sig = result.signal ?? received ?? 'SIGKILL';
      exitCode = signalExitCode(sig);
      record = {
        exitCode: null,
        signal: sig,
        endedAt: new Date().toISOString(),
        ...(signalled ? { reason: `stopped by ${received}` } : {}),
      };
    }
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
    exitCode = received === undefined ? shimError.exitCode : signalExitCode(received);
    const message = redactMessage(shimError.message);
    say(message);
    say(`failed before the tool could finish (exit code ${exitCode})`);
    record = { exitCode, signal: null, endedAt: new Date().toISOString(), reason: message };
  } finally {
    if (killTimer !== undefined) clearTimeout(killTimer);
    for (const s of SIGNALS) process.off(s, onSignal);
    if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
  }
  if (env.RW_RESULT_DIR !== undefined && env.RW_RESULT_DIR !== '') {
    try {
      writeExitRecord(env.RW_RESULT_DIR, record);
    } catch (error) {
      say(`could not write exit.json: ${(error as Error).message}`);
    }
  }
  return exitCode;
}

interface ToolResult {
  readonly tool: string;
  readonly code: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
}

interface ToolHooks {
  readonly say: (message: string) => void;
  readonly write: (text: string) => void;
  /** Aborted when the shim is told to stop before the tool runs (e.g. during a download). */
  readonly signal: AbortSignal;
  readonly stop: (signal: NodeJS.Signals) => void;
  /** `stopper` replaces signalling the child (container mode: `docker stop` / `docker rm -f`). */
  readonly started: (child: ChildProcess, stopper?: (signal: NodeJS.Signals) => void) => void;
}

function signalExitCode(signal: string): number {
  const n = (constants.signals as Record<string, number | undefined>)[signal];
  return 128 + (n ?? 9);
}

async function runTool(
  spec: TaskSpec,
  workDir: string,
  env: NodeJS.ProcessEnv,
  redaction: CompiledRedaction,
  { say, write, signal, stop, started }: ToolHooks,
): Promise<ToolResult> {
  const container = containerTargetOf(env);
  /** A host path as the tool sees it: itself, or its path inside the container. */
  const place = (hostPath: string): string => {
    if (container === undefined) return hostPath;
    try {
      return containerPath(container, workDir, hostPath);
    } catch (error) {
      throw new ShimError((error as Error).message);
    }
  };
  /** Where the tool may write scratch files: the private dir, or the container's own filesystem. */
  const scratch = (name: string): string =>
    container === undefined ? join(workDir, name) : containerScratch(name);

  // In container mode the tool gets exactly these variables, in process mode they go on top of the shim's own.
  // The host's ANSIBLE_* are not forwarded into a container: their paths (ANSIBLE_CONFIG, roles) are the host's.
  const toolEnv: Record<string, string> = {};
  // parseTaskSpec refused names the shim owns, so the assignments below always win.
  Object.assign(toolEnv, spec.env);
  Object.assign(toolEnv, {
    ANSIBLE_FORCE_COLOR: '0',
    ANSIBLE_NOCOLOR: '1',
    NO_COLOR: '1',
    PYTHONUNBUFFERED: '1',
    ANSIBLE_RETRY_FILES_ENABLED: '0',
    ANSIBLE_LOCAL_TEMP: scratch('ansible-local'),
    // Per-run SSH control sockets: two runs must never share a master authenticated with the other's key.
    ANSIBLE_SSH_CONTROL_PATH_DIR: scratch('cp'),
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
  if (container?.assetMount !== undefined) {
    // The work dir is mounted read-only, so the engine cannot make the asset mount's mountpoint in it.
    const rel = relative(CONTAINER_WORK_DIR, container.assetMount.container);
    if (rel !== '' && !rel.startsWith('..')) mkdirSync(join(workDir, rel), { recursive: true, mode: 0o700 });
  }

  let command: ToolCommand;
  if (spec.kind === 'k8s_op') {
    const op = spec.operation;
    if (op === undefined) throw new ShimError('a k8s_op run needs an operation');
    const assetPath = k8sNeedsAsset(op, spec.assetType)
      ? await resolveAsset(spec, join(workDir, 'asset'), env, signal)
      : undefined;
    command = k8sCommand(op, assetPath === undefined ? undefined : place(assetPath));
  } else {
    const keyVars: string[] = [];
    if (spec.sshKeyEnv !== undefined) {
      const keyFile = join(workDir, 'ssh-key');
      writePrivateFile(keyFile, sshKeyFileText(env[spec.sshKeyEnv] ?? ''));
      // On the command line, so it outranks an inventory or extra-vars value; the path is no secret.
      keyVars.push('-e', JSON.stringify({ ansible_ssh_private_key_file: place(keyFile) }));
    }
    const assetPath = place(await resolveAsset(spec, join(workDir, 'asset'), env, signal));
    const inventoryFile = join(workDir, 'inventory.json');
    if (spec.assetType === 'playbook') {
      writePrivateFile(inventoryFile, JSON.stringify(spec.inventory));
      const extraVarsFile = join(workDir, 'extra-vars.json');
      const vars = { ...spec.extraVars, ...secretPlayVars(spec, env) };
      writePrivateFile(extraVarsFile, JSON.stringify(vars));
      command = {
        tool: 'ansible-playbook',
        args: ['-i', place(inventoryFile), '-e', `@${place(extraVarsFile)}`, ...keyVars, assetPath],
      };
    } else {
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
      command = {
        tool: 'ansible-playbook',
        args: ['-i', place(inventoryFile), ...keyVars, place(wrapperFile)],
      };
    }
  }
  if (signal.aborted) throw new ShimError('stopped before the tool ran');

  // Built before the tool starts: a redactor that cannot be made must not leave a tool running unread.
  const stdoutRedactor = redaction.redactor();
  const stderrRedactor = redaction.redactor();
  say(`running ${commandLine(command.tool, command.args)}`);
  let child: ChildProcessByStdio<null, Readable, Readable>;
  let stopper: ((signal: NodeJS.Signals) => void) | undefined;
  /** Removes the container, whatever state it is in; resolves once the engine answered. */
  let removeContainer: () => Promise<unknown> = async () => {};
  if (container === undefined) {
    const childEnv: NodeJS.ProcessEnv = { ...env };
    // Secrets reach the tool as play variables through a 0600 file, not as environment a module could print.
    for (const { env: name } of spec.secretVars) delete childEnv[name];
    // The key reaches the tool as a 0600 file.
    if (spec.sshKeyEnv !== undefined) delete childEnv[spec.sshKeyEnv];
    delete childEnv.RW_TASK;
    delete childEnv.RW_TASK_FILE;
    Object.assign(childEnv, toolEnv);
    child = spawn(command.tool, command.args, {
      cwd: workDir,
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
  } else {
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
    let args: string[];
    try {
      args = dockerRunArgs(container, workDir, command.tool, command.args, toolEnv);
    } catch (error) {
      throw new ShimError((error as Error).message);
    }
    say(`in container ${container.name} from image ${container.image}`);
    child = spawn(container.bin, args, {
      cwd: workDir,
      env: cliEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let removing: Promise<unknown> | undefined;
    removeContainer = () => {
      // SIGKILL first: podman's `rm -f` would wait out the stop timeout (10 s) where docker's kills at once.
      removing ??= containerCommand(container, ['kill', container.name], cliEnv).then(() =>
        containerCommand(container, ['rm', '-f', container.name], cliEnv),
      );
      return removing;
    };
    let stopping = false;
    stopper = (sig) => {
      if (sig === 'SIGKILL') {
        // The engine did not stop it within the grace: remove it, and the CLI with it.
        void removeContainer();
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
        return;
      }
      if (stopping) return;
      stopping = true;
      // The engine sends SIGTERM to the container's init and SIGKILL after the grace; signalling the CLI would not reach it.
      const graceSeconds = Math.max(1, Math.ceil(positiveInt(env.RW_KILL_GRACE_MS, 5000) / 1000));
      void containerCommand(container, ['stop', '-t', String(graceSeconds), container.name], cliEnv);
    };
  }
  const emit = (line: string): void => write(`${line}\n`);
  const out = pipeLines(child.stdout, stdoutRedactor, emit);
  const err = pipeLines(child.stderr, stderrRedactor, emit);

  let timedOut = false;
  const timer =
    spec.timeoutSeconds > 0
      ? setTimeout(() => {
          timedOut = true;
          say(`timed out after ${spec.timeoutSeconds}s; stopping ${command.tool}`);
          stop('SIGTERM');
        }, spec.timeoutSeconds * 1000)
      : undefined;

  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, sig) => resolve({ code, signal: sig }));
  });
  if (child.pid !== undefined) started(child, stopper);
  let status: { code: number | null; signal: string | null };
  try {
    status = await exited;
  } catch (error) {
    out.finish();
    err.finish();
    if (timer !== undefined) clearTimeout(timer);
    const code = (error as NodeJS.ErrnoException).code;
    const what = container === undefined ? command.tool : `the container CLI ${container.bin}`;
    throw new ShimError(
      `cannot run ${what}: ${code === 'ENOENT' ? 'not found on PATH' : (error as Error).message}`,
      EXIT_NOT_FOUND,
    );
  }
  if (timer !== undefined) clearTimeout(timer);
  if (child.pid !== undefined && (status.signal !== null || timedOut)) {
    // Stragglers of a stopped tool would keep its pipes (and the pause they sit in) alive.
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Group already gone.
    }
  }
  const closed = Promise.all([out.done, err.done]);
  const grace = new Promise<void>((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref());
  await Promise.race([closed, grace]);
  out.finish();
  err.finish();
  child.stdout.destroy();
  child.stderr.destroy();
  // `--rm` removes it on a normal exit; after a stop or a killed CLI it may still be there. None is left behind.
  await removeContainer();
  return { tool: command.tool, code: status.code, signal: status.signal, timedOut };
}

function containerTargetOf(env: NodeJS.ProcessEnv): ContainerTarget | undefined {
  if (env.RW_CONTAINER === undefined || env.RW_CONTAINER === '') return undefined;
  try {
    return parseContainerTarget(env.RW_CONTAINER);
  } catch (error) {
    throw new ShimError((error as Error).message);
  }
}

function readKubeconfigFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new ShimError(`cannot read the kubeconfig ${path}: ${(error as Error).message}`);
  }
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
      process.exit(EXIT_SHIM_FAILED);
    },
  );
}
