import { loadSettings, ONCE, type Settings } from '../config/load-settings.ts';
import { type FieldError, SettingsInvalidError } from '../domain/errors.ts';
import { once } from '../lib/once.ts';
import * as z from '../lib/zod.ts';

/*
 * The Lambda environment, read by every function's composition
 * (shared/composition/lambda/*): no SDK client and no YAML parser here, so a
 * function that needs neither (Healthz) is bundled without them.
 */

/** Unset and empty are the same for an optional variable: `FOO=` in a template must not count as a value. */
const optional = <T extends z.ZodMiniType>(schema: T) =>
  z.pipe(
    z.transform((value: unknown) => (value === '' ? undefined : value)),
    z.optional(schema),
  );

/** Optional, and `fallback` when unset or empty. */
const withDefault = (fallback: string) =>
  z.pipe(
    optional(nonEmpty()),
    z.transform((v: string | undefined) => v ?? fallback),
  );

const nonEmpty = (message?: string) => z.string().check(z.minLength(1, message));

const queueUrl = () =>
  z.url({
    protocol: /^https?$/,
    error: 'must be an SQS queue URL (https://sqs.…/account/name)',
  });

const TASK_DEFINITIONS_FORMAT =
  'must be a JSON object mapping each runner image to its ECS task definition ({"chrweav/ansible-cloud": "remote-worker-ansible-cloud"})';

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

/** The schema of the environment, built on first use: a cold start builds it once, when it reads the environment. */
const environmentSchema = once(() =>
  z.object({
    RUNS_TABLE: nonEmpty('must name the DynamoDB runs table'),
    /** Where the relay writes its runs' output (runners/relay/config.ts); default RUNS_TABLE. */
    LOGS_TABLE: optional(nonEmpty()),
    DISPATCH_QUEUE_URL: queueUrl(),
    /** Unset: this deployment has no on-prem relay, and `local` runs are refused with a reason. */
    RELAY_QUEUE_URL: optional(queueUrl()),
    ASSET_BUCKET: z.string().check(z.minLength(3, 'must name the S3 bucket holding assets')),
    ASSET_PREFIX: optional(z.string()),
    LOG_GROUP: nonEmpty('must name the CloudWatch Logs group runs write to'),
    /** Unset: the `ecs` runner is not available (with the cluster and subnet settings, see `launcherFactories`). */
    ECS_TASK_DEFINITIONS: optional(taskDefinitions()),
    /** The runner container in every task definition: overridden by this name, its exit code is the run's. */
    ECS_CONTAINER_NAME: withDefault('runner'),
    /** The awslogs `streamPrefix` of the runner container: streams are `<prefix>/<container>/<task id>`. */
    ECS_LOG_STREAM_PREFIX: withDefault('run'),
    /**
     * Secrets Manager name prefix for values minted for one run (token-prepared
     * kubeconfigs, checked-out logins); unset, ECS refuses runs that need them.
     */
    RUN_SECRETS_PREFIX: optional(
      z.string().check(z.regex(/^[A-Za-z0-9/_+=.@-]{1,400}$/, 'must be a Secrets Manager name prefix')),
    ),
    /** Family prefix of the per-run task definitions (runs with secrets); the launcher's default when unset. */
    ECS_TASK_FAMILY_PREFIX: optional(
      z.string().check(z.regex(/^[A-Za-z0-9_-]{1,200}$/, 'must be letters, digits, - and _')),
    ),
    LOG_LEVEL: optional(
      z.pipe(
        z.pipe(
          z.string(),
          z.transform((s: string) => s.toUpperCase()),
        ),
        z.enum(LOG_LEVELS),
      ),
    ),
    /** Set by Lambda; part of the dispatcher's owner id so a claim says which function holds it. */
    AWS_LAMBDA_FUNCTION_NAME: optional(z.string()),
    /** An emulator (moto, LocalStack, MinIO) serves S3 path-style only. */
    AWS_ENDPOINT_URL: optional(z.string()),
    AWS_ENDPOINT_URL_S3: optional(z.string()),
  }),
);

/** The variables the environment schema reads (the stack sets exactly these, beside the settings). */
export const AWS_ENVIRONMENT_KEYS = (): readonly string[] => Object.keys(environmentSchema().shape);

export type AwsEnvironment = z.infer<ReturnType<typeof environmentSchema>>;

/** What each required variable holds, for the message when it is missing. */
const REQUIRED: Readonly<Record<string, string>> = {
  RUNS_TABLE: 'the DynamoDB runs table name',
  DISPATCH_QUEUE_URL: 'the dispatch SQS queue URL',
  ASSET_BUCKET: 'the S3 bucket holding assets',
  LOG_GROUP: 'the CloudWatch Logs group run output goes to',
};

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
  const problems: FieldError[] = [];
  const parsed = environmentSchema().safeParse(source, ONCE);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = issue.path.join('.') || '(environment)';
      const missing = source[name] === undefined || source[name] === '';
      problems.push({
        path: name,
        message: missing ? `is not set: give ${REQUIRED[name] ?? 'a value'}` : issue.message,
      });
    }
  }
  let settings: Settings | undefined;
  try {
    settings = loadSettings({ env: source });
  } catch (error) {
    if (!(error instanceof SettingsInvalidError)) throw error;
    problems.push(...error.problems);
  }
  if (!parsed.success || settings === undefined || problems.length > 0) {
    throw new SettingsInvalidError(problems);
  }
  return { env: parsed.data, settings };
}

/** An emulator (moto, LocalStack, MinIO) serves S3 path-style only. */
export const forcePathStyle = (env: {
  readonly AWS_ENDPOINT_URL?: string | undefined;
  readonly AWS_ENDPOINT_URL_S3?: string | undefined;
}): boolean => env.AWS_ENDPOINT_URL_S3 !== undefined || env.AWS_ENDPOINT_URL !== undefined;
