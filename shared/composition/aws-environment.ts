import { loadSettings, ONCE, type Settings } from '../config/load-settings.ts';
import { type FieldError, SettingsInvalidError } from '../domain/errors.ts';
import { once } from '../lib/once.ts';
import * as z from '../lib/zod.ts';

/*
 * The Lambda environment, read by every function's composition
 * (shared/composition/lambda/*): no SDK client and no YAML parser here, so a
 * function that needs neither (Healthz) is bundled without them.
 */

/**
 * One variable of the environment. Unset and empty are the same: `FOO=` in a
 * template must not count as a value. A set value is checked by `schema`,
 * built the first time a cold start sees the variable set (none: any text,
 * taken as given); an unset one is a problem when the variable is required
 * (`holds` says what it should hold), else reads as `unset`.
 */
interface Variable<T, U> {
  readonly schema?: () => z.ZodMiniType<T>;
  readonly holds?: string;
  readonly unset?: U;
}

/** Required: `holds` is what it should hold, for the message when it is not set. */
const required = <T = string>(holds: string, schema?: () => z.ZodMiniType<T>): Variable<T, never> => ({
  holds,
  ...(schema === undefined ? {} : { schema: once(schema) }),
});

/** Optional: undefined when unset or empty. */
const optional = <T = string>(schema?: () => z.ZodMiniType<T>): Variable<T, undefined> =>
  schema === undefined ? {} : { schema: once(schema) };

/** Optional, and `fallback` when unset or empty. */
const withDefault = (fallback: string): Variable<string, string> => ({ unset: fallback });

/** Shared by both queue variables: one schema per cold start. */
const queueUrl = once(() =>
  z.url({
    protocol: /^https?$/,
    error: 'must be an SQS queue URL (https://sqs.…/account/name)',
  }),
);

const TASK_DEFINITIONS_FORMAT =
  'must be a JSON object mapping each runner image to its ECS task definition ({"chrweav/ansible-cloud": "remote-worker-ansible-cloud"})';

const nonEmpty = () => z.string().check(z.minLength(1));

/** `ECS_TASK_DEFINITIONS`: JSON text, image → task definition family (or `family:revision`, or ARN). */
const taskDefinitions = () =>
  z.pipe(
    z.string(),
    z.transform((text: string, ctx): Record<string, string> => {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        ctx.issues.push({
          code: 'custom',
          input: text,
          message: `${TASK_DEFINITIONS_FORMAT}; it is not JSON`,
        });
        return z.NEVER;
      }
      const parsed = z.record(nonEmpty(), nonEmpty()).safeParse(value, ONCE);
      if (!parsed.success) {
        const where = parsed.error.issues.map((i) => i.path.join('.') || '(top level)').join(', ');
        ctx.issues.push({
          code: 'custom',
          input: text,
          message: `${TASK_DEFINITIONS_FORMAT}; bad entry at ${where}`,
        });
        return z.NEVER;
      }
      return parsed.data;
    }),
  );

const LOG_LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'] as const;

/**
 * The environment, variable by variable. A cold start builds the schemas of
 * the variables that are set and need one, and no other: most are names
 * taken as they are, and building a schema object for the whole environment
 * cost about 4 ms of every function's first call here (the first call of
 * readAwsEnvironment went from 6.2–6.7 ms to 4.3 ms with the Lambda bench's
 * environment).
 */
const ENVIRONMENT = {
  RUNS_TABLE: required('the DynamoDB runs table name'),
  /** Where the relay writes its runs' output (runners/relay/config.ts); default RUNS_TABLE. */
  LOGS_TABLE: optional(),
  DISPATCH_QUEUE_URL: required('the dispatch SQS queue URL', queueUrl),
  /** Unset: this deployment has no on-prem relay, and `local` runs are refused with a reason. */
  RELAY_QUEUE_URL: optional(queueUrl),
  ASSET_BUCKET: required('the S3 bucket holding assets', () =>
    z.string().check(z.minLength(3, 'must name the S3 bucket holding assets')),
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
  RUN_SECRETS_PREFIX: optional(() =>
    z.string().check(z.regex(/^[A-Za-z0-9/_+=.@-]{1,400}$/, 'must be a Secrets Manager name prefix')),
  ),
  /** Family prefix of the per-run task definitions (runs with secrets); the launcher's default when unset. */
  ECS_TASK_FAMILY_PREFIX: optional(() =>
    z.string().check(z.regex(/^[A-Za-z0-9_-]{1,200}$/, 'must be letters, digits, - and _')),
  ),
  LOG_LEVEL: optional(() =>
    z.pipe(
      z.pipe(
        z.string(),
        z.transform((s: string) => s.toUpperCase()),
      ),
      z.enum(LOG_LEVELS),
    ),
  ),
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
    if (variable.schema === undefined) {
      env[name] = value;
      continue;
    }
    const parsed = variable.schema().safeParse(value, ONCE);
    if (parsed.success) env[name] = parsed.data;
    else
      for (const issue of parsed.error.issues)
        problems.push({ path: [name, ...issue.path].join('.'), message: issue.message });
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
  // Every required variable is in `env` when no problem was found, each value as its schema read it.
  return { env: env as AwsEnvironment, settings };
}

/** An emulator (moto, LocalStack, MinIO) serves S3 path-style only. */
export const forcePathStyle = (env: {
  readonly AWS_ENDPOINT_URL?: string | undefined;
  readonly AWS_ENDPOINT_URL_S3?: string | undefined;
}): boolean => env.AWS_ENDPOINT_URL_S3 !== undefined || env.AWS_ENDPOINT_URL !== undefined;
