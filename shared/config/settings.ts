import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { STORAGE_BACKENDS } from '../domain/asset-access.ts';
import { type FieldError, SettingsInvalidError } from '../domain/errors.ts';
import { isDnsLabel, isDnsSubdomain } from '../domain/kubernetes-names.ts';
import { RUNNERS, type Runner } from '../domain/run.ts';
import { DISCOVERY_SETTINGS } from './discovery-settings.ts';
import { HYPERVISOR_SETTINGS } from './hypervisor-settings.ts';

/**
 * The one schema for operator settings and its loader.
 *
 * Keys keep the seeds' snake_case names (`ansible_runner_aws`, `k8s_runner_image`,
 * `ansible_ecs_subnet_id` …) so operators recognise them from the reference docs;
 * each can be overridden by an environment variable of the same name upper-cased.
 */

const runner = z.enum(RUNNERS);

/** An empty string is almost always a half-deleted value; make the operator omit the key instead. */
const text = () => z.string().trim().min(1, 'must not be empty: omit the key to leave it unset');

/**
 * Lists arrive as one comma-separated string from an environment variable, but
 * a YAML file may just as well hold a real list; both end up as string[].
 */
const list = (item: z.ZodString) =>
  z
    .union([z.string(), z.array(z.string())])
    .transform((value) =>
      (typeof value === 'string' ? value.split(',') : value).map((s) => s.trim()).filter((s) => s !== ''),
    )
    .pipe(z.array(item));

/**
 * One id or several, comma-separated (how the seeds' `ansible_ecs_subnet_id` is written), each of a
 * shape: a typo in a network id otherwise shows up only when the cloud refuses the first launch.
 */
const idList = (pattern: RegExp, example: string) =>
  text().refine((value) => value.split(',').every((id) => id.trim() === '' || pattern.test(id.trim())), {
    error: `must be ${example}, or several comma-separated`,
  });

const cidr = z.union([z.cidrv4(), z.cidrv6()], {
  error: 'must be an IPv4 or IPv6 CIDR such as 203.0.113.7/32',
});

export const SettingsSchema = z
  .strictObject({
    // Runner per run family. `<cloud>` keys fall back to the global one, except for
    // cluster/database plays, which default to the cloud's native runner (see runner-resolution.ts).
    ansible_runner: runner.default('local'),
    ansible_runner_aws: runner.optional(),
    ansible_runner_azure: runner.optional(),
    ansible_runner_gcp: runner.optional(),
    ansible_runner_portainer: runner.optional(),
    k8s_runner: runner.default('local'),
    k8s_runner_aws: runner.optional(),
    k8s_runner_azure: runner.optional(),
    k8s_runner_gcp: runner.optional(),

    // Images are settings, not code: operators mirror them to private registries.
    ansible_local_image: text().default('chrweav/ansible-winrm:latest'),
    ansible_cloud_image: text().default('chrweav/ansible-cloud'),
    k8s_runner_image: text().default('dtzar/helm-kubectl'),

    // ECS plumbing shared by the Ansible and Kubernetes runners.
    ansible_ecs_cluster: text().optional(),
    ansible_ecs_subnet_id: idList(
      /^subnet-[0-9a-f]+$/,
      'a subnet id such as subnet-0123456789abcdef0',
    ).optional(),
    // Checked for shape because a typo here only shows up as a failed RunTask much later.
    ansible_ecs_security_group_ids: list(
      z.string().regex(/^sg-[0-9a-f]{8,17}$/, 'must be a security group id such as sg-0123456789abcdef0'),
    ).optional(),
    ansible_ecs_assign_public_ip: z.boolean().default(false),
    ansible_ecs_execution_role_arn: text().optional(),
    /**
     * Local mode: runner image → ECS task definition (family, family:revision or ARN) whose `runner`
     * container runs that image; a deployed stack makes its own (ECS_TASK_DEFINITIONS).
     */
    ansible_ecs_task_definitions: z.record(z.string().min(1), z.string().min(1)).optional(),
    /** Local mode: the CloudWatch Logs group those task definitions' awslogs driver writes to. */
    ansible_ecs_log_group: text().optional(),

    // ACI plumbing.
    ansible_aci_subnet_id: idList(
      /^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.Network\/virtualNetworks\/[^/]+\/subnets\/[^/]+$/i,
      'a subnet resource id (/subscriptions/…/resourceGroups/…/providers/Microsoft.Network/virtualNetworks/…/subnets/…)',
    ).optional(),
    ansible_aci_acr_server: text().optional(),
    ansible_aci_acr_username: text().optional(),
    /** The NAME of the secret holding the registry password, never the password. */
    ansible_aci_acr_password_secret: text().optional(),
    azure_subscription_id: text().optional(),
    azure_resource_group: text().optional(),
    azure_location: text().optional(),

    // Cloud Run plumbing.
    gcp_project_id: text().optional(),
    gcp_region: text().optional(),
    gcp_ansible_cloud_run_region: text().optional(),
    /** A connector name (expanded in the run's project and region) or its full resource name. */
    gcp_ansible_vpc_connector: text()
      .regex(
        /^(?:[a-z][-a-z0-9]{0,23}[a-z0-9]|projects\/[^/]+\/locations\/[^/]+\/connectors\/[a-z][-a-z0-9]{0,23}[a-z0-9])$/,
        'must be a Serverless VPC Access connector name (a-z, 0-9, -; 2–25 characters) or projects/<p>/locations/<r>/connectors/<name>',
      )
      .optional(),

    // Kubernetes pod runner (one pod per run in a namespace the runner owns).
    // Names are checked here, not at the first Kubernetes run: the API server would refuse them only then.
    kubernetes_namespace: text()
      .refine(isDnsLabel, 'must be a DNS-1123 label (a-z, 0-9, -; at most 63 characters)')
      .default('remote-worker'),
    /**
     * Path to a kubeconfig; absent means in-cluster credentials (the pod's service account). The file
     * must exist and hold a kubeconfig when settings are loaded (loadSettings), not at the first run.
     */
    kubernetes_kubeconfig: text().optional(),
    /** Service account of the task pods: no permissions, no API token. */
    kubernetes_service_account: text()
      .refine(isDnsSubdomain, 'must be a DNS-1123 subdomain name (a-z, 0-9, -, .)')
      .default('remote-worker-task'),
    kubernetes_pull_secrets: list(
      z.string().refine(isDnsSubdomain, {
        error: (issue) => `${String(issue.input)} is not a DNS-1123 subdomain name`,
      }),
    ).optional(),

    // Status polling for backends without push events (ACI, Cloud Run, Kubernetes).
    poll_interval_seconds: z.int().min(1).max(300).default(3),
    /** How long a backend may answer "unknown" (errors, throttling, not found yet) before the run fails. */
    status_unknown_grace_seconds: z.int().min(10).max(3600).default(300),
    /** What a stopped task gets between the stop signal and the kill. */
    cleanup_grace_seconds: z.int().min(0).max(600).default(30),

    // Cloud VM SSH keys, by secret name.
    ansible_ssh_key_sm_name: text().optional(),
    gcp_ssh_key_secret_name: text().optional(),
    /** Legacy AWS fallback: a Password Safe secret title. */
    ansible_ssh_key_secret: text().default('AWS_KEY'),

    // Asset storage. The active backend is where POST /assets writes and runs read; unset, local mode
    // uses the local filesystem and a deployed stack its S3 bucket. In-cloud tasks get a read URL.
    storage_backend: z.enum(STORAGE_BACKENDS).optional(),
    /**
     * The local backend's root. Unset: `<REMOTE_WORKER_DATA_DIR>/assets`, seeded with the examples on first
     * start (shared/local-mode/asset-root.ts), so uploads never land in the source tree.
     */
    local_storage_path: text().optional(),
    /** S3 bucket (and key prefix) of the s3 backend; a deployed stack sets its own bucket. */
    asset_s3_bucket: text().optional(),
    asset_s3_prefix: z.string().optional(),
    /** Blob service URL of the azure_blob backend: https://<account>.blob.core.windows.net */
    azure_storage_account_url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    azure_storage_container: text().optional(),
    azure_storage_prefix: z.string().optional(),
    /**
     * The NAME of the secret holding the storage account key, never the key: with it, read SASs are signed
     * with the key; without it, with a user delegation key the Azure identity (AZURE_* env) asks for.
     */
    azure_storage_key_secret: text().optional(),
    gcs_bucket: text().optional(),
    gcs_prefix: z.string().optional(),
    /**
     * How long a launched task has to start and fetch its asset: the lifetime of its read URL (never past
     * the run's own deadline). Fargate image pulls and Cloud Run cold starts take minutes at worst.
     */
    start_deadline_seconds: z.int().min(60).max(43_200).default(900),
    local_executor: z.enum(['auto', 'process', 'docker']).default('auto'),
    /** The docker executor's CLI: `docker`, or `podman` (which takes the same arguments). */
    local_docker_cli: text().default('docker'),
    /** Extra bind mounts for the docker executor's task containers, `-v` syntax, never over /ansible. */
    local_docker_volumes: list(
      z
        .string()
        .regex(/^\/[^:]*:\/[^:]*(:(ro|rw))?$/, 'must be /host/path:/container/path or …:ro')
        .refine((v) => !/^[^:]*:\/ansible(\/|:|$)/.test(v), 'must not mount over /ansible'),
    ).optional(),
    // The seeds' WORKER_REPLICAS: the ceiling on how many hosts a batch touches at once.
    relay_concurrency: z.int().min(1).max(64).default(3),
    default_timeout_seconds: z.int().min(1).max(86_400).default(3600),
    // 7 days: Cloud Run's task timeout ceiling, the tightest of the backends.
    max_timeout_seconds: z.int().min(1).max(604_800).default(86_400),
    // SQS accepts a maxReceiveCount of 1..1000.
    dispatch_max_receive_count: z.int().min(1).max(1000).default(5),

    // Password Safe (BeyondTrust) for just-in-time checkout of registered databases' managed accounts.
    password_safe_url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    /** The NAME of the secret holding the Password Safe API key, never the key. */
    password_safe_api_key_secret: text().optional(),
    /** The Password Safe user the API key acts as (`runas`). */
    password_safe_runas: text().optional(),
    /** Requested checkout duration; the run's own timeout is used when longer. */
    password_safe_checkout_minutes: z.int().min(1).max(10_080).default(60),

    portainer_url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    /** The NAME of the secret holding the API token, never the token. */
    portainer_api_token_secret: text().optional(),
    portainer_allowed_source_cidrs: list(z.string()).pipe(z.array(cidr)).optional(),

    // On-prem hypervisor integrations: <h>_enabled, <h>_host, <h>_user, <h>_password_secret (hypervisor-settings.ts).
    ...HYPERVISOR_SETTINGS,
    // Cloud VM discovery: discovery_clouds, per-cloud scopes, the schedule (discovery-settings.ts).
    ...DISCOVERY_SETTINGS,
  })
  .superRefine((s, ctx) => {
    const needs = (key: keyof typeof s, why: string) => {
      if (s[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: `must be set ${why}` });
    };
    if (s.storage_backend === 'azure_blob') {
      needs('azure_storage_account_url', 'when storage_backend is azure_blob');
      needs('azure_storage_container', 'when storage_backend is azure_blob');
    }
    if (s.storage_backend === 'gcs') needs('gcs_bucket', 'when storage_backend is gcs');
    if (s.azure_storage_container !== undefined)
      needs('azure_storage_account_url', 'with azure_storage_container');
    // Password Safe chosen (its URL set) but half configured would fail only at the first checkout.
    if (s.password_safe_url !== undefined) {
      needs('password_safe_api_key_secret', 'with password_safe_url');
      needs('password_safe_runas', 'with password_safe_url');
    }
    if (s.default_timeout_seconds > s.max_timeout_seconds) {
      ctx.addIssue({
        code: 'custom',
        path: ['default_timeout_seconds'],
        message: `must not exceed max_timeout_seconds (${s.max_timeout_seconds})`,
      });
    }
  });

export type Settings = z.infer<typeof SettingsSchema>;

/** Every runner some runner setting sends work to, for telling "not configured" from "not wanted". */
export function selectedRunners(settings: Settings): ReadonlySet<Runner> {
  return new Set(
    [
      settings.ansible_runner,
      settings.ansible_runner_aws,
      settings.ansible_runner_azure,
      settings.ansible_runner_gcp,
      settings.ansible_runner_portainer,
      settings.k8s_runner,
      settings.k8s_runner_aws,
      settings.k8s_runner_azure,
      settings.k8s_runner_gcp,
    ].filter((r): r is Runner => r !== undefined),
  );
}
export type SettingKey = keyof Settings;
export const SETTING_KEYS = Object.keys(SettingsSchema.shape) as readonly SettingKey[];

/**
 * Environment variables are strings; the schema stays strict for files (a quoted
 * `"3"` in YAML is a mistake worth reporting), so coercion happens here, driven by
 * the schema's own input types rather than a hand-kept list that could drift.
 */
let inputTypes: Readonly<Record<string, unknown>> | undefined;
/** Computed on first use, not at import: it costs a few ms of every Lambda cold start otherwise. */
function inputTypeOf(key: string): unknown {
  inputTypes ??= Object.fromEntries(
    Object.entries(z.toJSONSchema(SettingsSchema, { io: 'input' }).properties ?? {}).map(([k, prop]) => [
      k,
      typeof prop === 'object' ? prop.type : undefined,
    ]),
  );
  return inputTypes[key];
}

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

function coerceEnv(key: string, raw: string): unknown {
  const value = raw.trim();
  switch (inputTypeOf(key)) {
    case 'integer':
    case 'number':
      // Anything that is not plainly a number stays a string so zod reports it as one.
      return /^[+-]?\d+(\.\d+)?$/.test(value) ? Number(value) : raw;
    case 'boolean': {
      const lower = value.toLowerCase();
      if (TRUE.has(lower)) return true;
      if (FALSE.has(lower)) return false;
      return raw;
    }
    case 'object':
      // A map from an environment variable is JSON text; anything else stays a string for zod to report.
      try {
        return JSON.parse(value) as unknown;
      } catch {
        return raw;
      }
    default:
      return raw;
  }
}

type Source =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'env'; readonly name: string };

const describeSource = (source: Source | undefined): string =>
  source === undefined
    ? 'default value'
    : source.kind === 'env'
      ? `from env ${source.name}`
      : `from ${source.path}`;

const CONFIG_ENV = 'REMOTE_WORKER_CONFIG';

export interface LoadSettingsOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Injected so tests and bundlers can replace the file system; must throw ENOENT for a missing file.
   * Reads the settings file and the files settings name (kubernetes_kubeconfig).
   */
  readonly readFile?: (path: string) => string;
}

const isMissingFile = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT';

function readConfigFile(path: string, readFile: (path: string) => string): Record<string, unknown> {
  const fail = (message: string): never => {
    throw new SettingsInvalidError([{ path: CONFIG_ENV, message }]);
  };
  let content: string;
  try {
    content = readFile(path);
  } catch (error) {
    return fail(
      isMissingFile(error)
        ? `settings file ${path} does not exist`
        : `cannot read settings file ${path}: ${(error as Error).message}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = /\.ya?ml$/i.test(path) ? parseYaml(content) : JSON.parse(content);
  } catch (error) {
    return fail(
      `settings file ${path} is not valid ${/\.ya?ml$/i.test(path) ? 'YAML' : 'JSON'}: ${(error as Error).message}`,
    );
  }
  // An empty YAML document is an empty settings file, not an error.
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    return fail(`settings file ${path} must hold an object of settings`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * Read settings once at cold start: the file named by REMOTE_WORKER_CONFIG (JSON,
 * or YAML for .yaml/.yml), then one environment variable per key, upper-cased.
 * Throws one SettingsInvalidError listing every problem, each naming its key and
 * where the bad value came from.
 *
 * @example
 * const settings = loadSettings(); // ANSIBLE_RUNNER_AWS=ecs overrides ansible_runner_aws from the file
 */
export function loadSettings(options: LoadSettingsOptions = {}): Settings {
  const env = options.env ?? process.env;
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));

  const raw: Record<string, unknown> = {};
  const sources = new Map<string, Source>();

  const configPath = env[CONFIG_ENV];
  if (configPath !== undefined && configPath !== '') {
    for (const [key, value] of Object.entries(readConfigFile(configPath, readFile))) {
      // A YAML key left blank (`ansible_ecs_cluster:`) means "unset", as an empty env var does.
      if (value === null) continue;
      raw[key] = value;
      sources.set(key, { kind: 'file', path: configPath });
    }
  }

  for (const key of SETTING_KEYS) {
    const name = key.toUpperCase();
    const value = env[name];
    // An empty variable counts as unset so `FOO=` in a compose file does not clobber the file.
    if (value === undefined || value === '') continue;
    raw[key] = coerceEnv(key, value);
    sources.set(key, { kind: 'env', name });
  }

  const result = SettingsSchema.safeParse(raw);
  // Checked whether or not the rest parses, so one error lists every problem.
  const fileProblems = checkFiles(raw, readFile, sources);
  if (result.success && fileProblems.length === 0) return result.data;
  if (result.success) throw new SettingsInvalidError(fileProblems);

  const problems: FieldError[] = [];
  for (const issue of result.error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const hint = closestKey(key);
        problems.push({
          path: key,
          message: `unknown setting (${describeSource(sources.get(key))})${hint === undefined ? '' : `; did you mean ${hint}?`}`,
        });
      }
      continue;
    }
    const [key, ...rest] = issue.path;
    const path = [key, ...rest].filter((p) => p !== undefined).join('.');
    problems.push({
      path: path === '' ? '(root)' : path,
      message: `${issue.message} (${describeSource(typeof key === 'string' ? sources.get(key) : undefined)})`,
    });
  }
  throw new SettingsInvalidError([...problems, ...fileProblems]);
}

/**
 * Settings that name a file are checked here, once, when settings are loaded:
 * a missing kubeconfig otherwise surfaces as a bare ENOENT naming no setting
 * (local mode) or as a failed first run (AWS). Only the shape is checked, and
 * messages never quote the file's content: a kubeconfig holds tokens.
 */
function checkFiles(
  raw: Readonly<Record<string, unknown>>,
  readFile: (path: string) => string,
  sources: ReadonlyMap<string, Source>,
): FieldError[] {
  const given = raw.kubernetes_kubeconfig;
  // Not a string, or blank: the schema reports it.
  if (typeof given !== 'string' || given.trim() === '') return [];
  const path = given.trim();
  const problem = (message: string): FieldError[] => [
    {
      path: 'kubernetes_kubeconfig',
      message: `${message} (${describeSource(sources.get('kubernetes_kubeconfig'))})`,
    },
  ];
  let content: string;
  try {
    content = readFile(path);
  } catch (error) {
    return problem(
      isMissingFile(error)
        ? `names ${path}, which does not exist`
        : `names ${path}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(content);
  } catch {
    return problem(`names ${path}, which is not YAML`);
  }
  const config = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  if (!Array.isArray(config.clusters) || config.clusters.length === 0) {
    return problem(`names ${path}, which is not a kubeconfig (it lists no clusters)`);
  }
  if (typeof config['current-context'] !== 'string' || config['current-context'] === '') {
    return problem(`names ${path}, which has no current-context`);
  }
  return [];
}

/** A typo is usually one or two edits away from a real key; offer it. */
function closestKey(unknown: string): SettingKey | undefined {
  let best: SettingKey | undefined;
  let bestDistance = 3;
  for (const key of SETTING_KEYS) {
    const d = editDistance(unknown.toLowerCase(), key);
    if (d < bestDistance) {
      best = key;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
