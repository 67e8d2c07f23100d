import { loadSettings, type Settings } from '../config/load-settings.ts';
import { type FieldError, SettingsInvalidError } from '../domain/errors.ts';

/*
 * The Lambda environment, read by every function's composition
 * (shared/composition/lambda/*): no SDK client and no YAML parser here, so a
 * function that needs neither (Healthz) is bundled without them.
 */

/**
 * One variable of the environment. Unset and empty are the same: `FOO=` in a
 * template must not count as a value. A set value is checked by `check`
 * (none: any text, taken as given), which answers the value as read or what
 * is wrong with it; an unset one is a problem when the variable is required
 * (`holds` says what it should hold), else reads as `unset`.
 *
 * The checks are plain functions rather than zod schemas: each is one test
 * (a URL's protocol, a length, a pattern, a list), and building and running
 * their zod schemas cost about 1.8 ms of every function's cold start here
 * (a fresh process each time, median of 21; the plain checks: 0.06 ms).
 */
interface Variable<T, U> {
  readonly check?: (value: string) => Checked<T>;
  readonly holds?: string;
  readonly unset?: U;
}

type Checked<T> = { readonly value: T } | { readonly problem: string };

/** Required: `holds` is what it should hold, for the message when it is not set. */
const required = <T = string>(holds: string, check?: (value: string) => Checked<T>): Variable<T, never> => ({
  holds,
  ...(check === undefined ? {} : { check }),
});

/** Optional: undefined when unset or empty. */
const optional = <T = string>(check?: (value: string) => Checked<T>): Variable<T, undefined> =>
  check === undefined ? {} : { check };

/** Optional, and `fallback` when unset or empty. */
const withDefault = (fallback: string): Variable<string, string> => ({ unset: fallback });

/** A value that passes `test` as it is, else `problem`. */
const passing =
  (test: (value: string) => boolean, problem: string) =>
  (value: string): Checked<string> =>
    test(value) ? { value } : { problem };

/** Both queue variables: an http(s) URL, read with its surrounding blanks trimmed. */
function queueUrl(value: string): Checked<string> {
  const trimmed = value.trim();
  let protocol: string | undefined;
  try {
    protocol = new URL(trimmed).protocol;
  } catch {
    // Not a URL: refused below.
  }
  return protocol === 'https:' || protocol === 'http:'
    ? { value: trimmed }
    : { problem: 'must be an SQS queue URL (https://sqs.…/account/name)' };
}

const TASK_DEFINITIONS_FORMAT =
  'must be a JSON object mapping each runner image to its ECS task definition ({"chrweav/ansible-cloud": "remote-worker-ansible-cloud"})';

/** `ECS_TASK_DEFINITIONS`: JSON text, image → task definition family (or `family:revision`, or ARN). */
function taskDefinitions(text: string): Checked<Record<string, string>> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: `${TASK_DEFINITIONS_FORMAT}; it is not JSON` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { problem: `${TASK_DEFINITIONS_FORMAT}; bad entry at (top level)` };
  }
  // Each image and each task definition must be non-empty text; an empty image reads as the top level.
  const bad = Object.entries(value)
    .filter(([image, family]) => image === '' || typeof family !== 'string' || family === '')
    .map(([image]) => image || '(top level)');
  return bad.length === 0
    ? { value: value as Record<string, string> }
    : { problem: `${TASK_DEFINITIONS_FORMAT}; bad entry at ${bad.join(', ')}` };
}

const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

/** Any case; read upper-cased. */
function logLevel(value: string): Checked<LogLevel> {
  const level = value.toUpperCase();
  return (LOG_LEVELS as readonly string[]).includes(level)
    ? { value: level as LogLevel }
    : { problem: `Invalid option: expected one of ${LOG_LEVELS.map((l) => `"${l}"`).join('|')}` };
}

/**
 * The environment, variable by variable: most are names taken as they are,
 * and a cold start checks only the variables that are set and need a check.
 * (Building one schema object for the whole environment had cost about 4 ms
 * of every function's first call here.)
 */
const ENVIRONMENT = {
  RUNS_TABLE: required('the DynamoDB runs table name'),
  /** Where the relay writes its runs' output (runners/relay/config.ts); default RUNS_TABLE. */
  LOGS_TABLE: optional(),
  DISPATCH_QUEUE_URL: required('the dispatch SQS queue URL', queueUrl),
  /** Unset: this deployment has no on-prem relay, and `local` runs are refused with a reason. */
  RELAY_QUEUE_URL: optional(queueUrl),
  ASSET_BUCKET: required(
    'the S3 bucket holding assets',
    passing((name) => name.length >= 3, 'must name the S3 bucket holding assets'),
  ),
  ASSET_PREFIX: optional(),
  LOG_GROUP: required('the CloudWatch Logs group run output goes to'),
  /** Unset: the `ecs` runner is not available (with the cluster and subnet settings, see `launcherFactories`). */
  ECS_TASK_DEFINITIONS: optional(taskDefinitions),
  /** The runner container in every task definition: overridden by this name, its exit code is the run's. */
  ECS_CONTAINER_NAME: withDefault('runner'),
  /** The awslogs `streamPrefix` of the runner container: streams are `<prefix>/<container>/<task id>`. */
  ECS_LOG_STREAM_PREFIX: withDefault('run'),
  /**
   * Secrets Manager name prefix for values minted for one run (token-prepared
   * kubeconfigs, checked-out logins); unset, ECS refuses runs that need them.
   */
  RUN_SECRETS_PREFIX: optional(
    passing((prefix) => /^[A-Za-z0-9/_+=.@-]{1,400}$/.test(prefix), 'must be a Secrets Manager name prefix'),
  ),
  /** Family prefix of the per-run task definitions (runs with secrets); the launcher's default when unset. */
  ECS_TASK_FAMILY_PREFIX: optional(
    passing((prefix) => /^[A-Za-z0-9_-]{1,200}$/.test(prefix), 'must be letters, digits, - and _'),
  ),
  LOG_LEVEL: optional(logLevel),
  /** Set by Lambda; part of the dispatcher's owner id so a claim says which function holds it. */
  AWS_LAMBDA_FUNCTION_NAME: optional(),
  /** An emulator (moto, LocalStack, MinIO) serves S3 path-style only. */
  AWS_ENDPOINT_URL: optional(),
  AWS_ENDPOINT_URL_S3: optional(),
};

type Variables = typeof ENVIRONMENT;
type Read<V> = V extends Variable<infer T, infer U> ? T | U : never;
type OptionalName = {
  [K in keyof Variables]: undefined extends Read<Variables[K]> ? K : never;
}[keyof Variables];

/** The environment as read: a required variable or one with a default always has a value. */
export type AwsEnvironment = {
  readonly [K in Exclude<keyof Variables, OptionalName>]: Read<Variables[K]>;
} & {
  readonly [K in OptionalName]?: Read<Variables[K]>;
};

/** The variables the environment is read from (the stack sets exactly these, beside the settings). */
export const AWS_ENVIRONMENT_KEYS = (): readonly string[] => Object.keys(ENVIRONMENT);

/** Each variable read, or the problems with it, in the order ENVIRONMENT lists them. */
function readVariables(source: Readonly<Record<string, string | undefined>>): {
  env: Record<string, unknown>;
  problems: FieldError[];
} {
  const env: Record<string, unknown> = {};
  const problems: FieldError[] = [];
  const variables: [string, Variable<unknown, unknown>][] = Object.entries(ENVIRONMENT);
  for (const [name, variable] of variables) {
    const value = source[name];
    if (value === undefined || value === '') {
      if (variable.holds !== undefined)
        problems.push({ path: name, message: `is not set: give ${variable.holds}` });
      else if (variable.unset !== undefined) env[name] = variable.unset;
      continue;
    }
    const checked = variable.check === undefined ? { value } : variable.check(value);
    if ('value' in checked) env[name] = checked.value;
    else problems.push({ path: name, message: checked.problem });
  }
  return { env, problems };
}

/**
 * Read the environment and the settings together and report every problem
 * at once: one SettingsInvalidError naming each bad variable and setting.
 *
 * @example
 * const { env, settings } = readAwsEnvironment(process.env);
 */
export function readAwsEnvironment(source: Readonly<Record<string, string | undefined>>): {
  env: AwsEnvironment;
  settings: Settings;
} {
  const { env, problems } = readVariables(source);
  let settings: Settings | undefined;
  try {
    settings = loadSettings({ env: source });
  } catch (error) {
    if (!(error instanceof SettingsInvalidError)) throw error;
    problems.push(...error.problems);
  }
  if (settings === undefined || problems.length > 0) throw new SettingsInvalidError(problems);
  // Every required variable is in `env` when no problem was found, each value as its check read it.
  return { env: env as AwsEnvironment, settings };
}

/** An emulator (moto, LocalStack, MinIO) serves S3 path-style only. */
export const forcePathStyle = (env: {
  readonly AWS_ENDPOINT_URL?: string | undefined;
  readonly AWS_ENDPOINT_URL_S3?: string | undefined;
}): boolean => env.AWS_ENDPOINT_URL_S3 !== undefined || env.AWS_ENDPOINT_URL !== undefined;
