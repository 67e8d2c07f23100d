import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { z } from 'zod';
import { type Settings, SettingsSchema } from '../shared/config/settings.ts';

/**
 * The per-environment deployment context (`cdk.json` → `context.environments.<name>`),
 * validated once before any construct exists so a bad `cdk.json` fails `cdk synth`
 * with one message naming every missing or wrong key.
 *
 * @example
 * const config = loadEnvironmentConfig(app.node.tryGetContext('env'), app.node.tryGetContext('environments'));
 * new ControlPlaneStack(app, `RemoteWorker-${config.name}`, { config });
 */

/** Settings the stack computes from the resources it creates; an operator value would silently disagree. */
export const STACK_OWNED_SETTINGS = [
  'ansible_ecs_cluster',
  'ansible_ecs_subnet_id',
  'ansible_ecs_security_group_ids',
  'ansible_ecs_execution_role_arn',
] as const satisfies readonly (keyof Settings)[];

const RETENTION_DAYS = Object.values(RetentionDays).filter((v): v is number => typeof v === 'number');

const awsId = (prefix: string) =>
  z.string().regex(new RegExp(`^${prefix}-[0-9a-f]{8,17}$`), `must look like ${prefix}-0123456789abcdef0`);

const arn = (what: string, pattern: RegExp) => z.string().regex(pattern, `must be ${what}`);

const IAM_PRINCIPAL_ARN = /^arn:aws[a-z-]*:iam::\d{12}:(root|role\/[\w+=,.@/-]+|user\/[\w+=,.@/-]+)$/;
const TRUST_ANCHOR_ARN = /^arn:aws[a-z-]*:rolesanywhere:[a-z0-9-]+:\d{12}:trust-anchor\/[0-9a-f-]{36}$/;

/**
 * Who may assume the relay's role: an IAM principal in another account or a
 * federated on-prem identity, or an IAM Roles Anywhere trust anchor (an X.509
 * certificate on the on-prem host, optionally pinned to certificate subjects).
 */
const RelaySchema = z
  .strictObject({
    principalArn: arn('an IAM role, user or account root ARN', IAM_PRINCIPAL_ARN).optional(),
    rolesAnywhere: z
      .strictObject({
        trustAnchorArn: arn('an IAM Roles Anywhere trust-anchor ARN', TRUST_ANCHOR_ARN),
        /** Certificate subject CNs allowed to assume the role; empty = any certificate the anchor trusts. */
        certificateCommonNames: z.array(z.string().min(1)).default([]),
      })
      .optional(),
    /**
     * Let the relay read the secrets under the environment's `secretsPrefix`
     * (relay runs with "Use a secret" bindings). Off: its role has only its
     * queue and the run table.
     */
    readSecrets: z.boolean().default(false),
  })
  .refine((r) => (r.principalArn === undefined) !== (r.rolesAnywhere === undefined), {
    message: 'set exactly one of principalArn or rolesAnywhere',
  });

const EnvironmentSchema = z.strictObject({
  account: z.string().regex(/^\d{12}$/, 'must be a 12-digit AWS account id'),
  region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'must be an AWS region such as eu-west-1'),
  network: z.strictObject({
    vpcId: awsId('vpc'),
    /** The AZs of `runnerSubnetIds`, in the same order (an imported VPC needs them to synthesize offline). */
    availabilityZones: z.array(z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d[a-z]$/)).min(1),
    runnerSubnetIds: z.array(awsId('subnet')).min(1),
    runnerSecurityGroupIds: z.array(awsId('sg')).min(1),
  }),
  /** Runner settings with the seeds' names; passed to every function as upper-cased environment variables. */
  settings: z.record(z.string(), z.unknown()).default({}),
  relay: RelaySchema,
  logRetentionDays: z
    .number()
    .refine((d) => RETENTION_DAYS.includes(d), `must be one of ${RETENTION_DAYS.join(', ')}`),
  alarmEmail: z.email(),
  /** With an issuer, the API uses a JWT authorizer (required scopes on every route) instead of IAM SigV4. */
  jwt: z
    .strictObject({
      issuer: z.url({ protocol: /^https$/ }),
      audience: z.array(z.string().min(1)).min(1),
      scopes: z.array(z.string().min(1)).default([]),
    })
    .optional(),
  /** Secrets Manager name prefix the dispatcher may read for "Use a secret" bindings and SSH keys. */
  secretsPrefix: z
    .string()
    .regex(/^[\w/+=.@-]+\/$/, 'must be a secret-name prefix ending in /, such as remote-worker/prod/')
    .optional(),
  /** Secret holding registry credentials for private runner images (username/password JSON). */
  registryCredentialsSecretName: z.string().min(1).optional(),
  api: z
    .strictObject({
      rateLimit: z.number().int().min(1).default(50),
      burstLimit: z.number().int().min(1).default(100),
    })
    .prefault({}),
  runnerTask: z
    .strictObject({
      cpu: z
        .union([z.literal(256), z.literal(512), z.literal(1024), z.literal(2048), z.literal(4096)])
        .default(1024),
      memoryMiB: z.number().int().min(512).max(30_720).default(2048),
      architecture: z.enum(['x86_64', 'arm64']).default('x86_64'),
    })
    .prefault({}),
});

export type EnvironmentContext = z.infer<typeof EnvironmentSchema>;

export interface EnvironmentConfig extends EnvironmentContext {
  /** `dev`, `prod` … — the key under `context.environments`. */
  readonly name: string;
  /** Only `dev` may lose its data on `cdk destroy`; every other environment keeps and protects it. */
  readonly isDev: boolean;
  /** The settings the operator wrote, untouched (defaults stay in shared/config/settings.ts). */
  readonly rawSettings: Readonly<Record<string, unknown>>;
  /** The same settings parsed with the application's own schema, defaults applied. */
  readonly parsedSettings: Settings;
  readonly secretsPrefix: string;
}

export class EnvironmentConfigError extends Error {
  override readonly name = 'EnvironmentConfigError';
}

function describeIssues(where: string, issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.map((issue) => {
    const path = [where, ...issue.path.map(String)].join('.');
    if (issue.code === 'invalid_type' && issue.message.includes('received undefined')) {
      return `${path}: missing (${issue.expected} required)`;
    }
    if (issue.code === 'unrecognized_keys') return `${path}: unknown key(s) ${issue.keys.join(', ')}`;
    return `${path}: ${issue.message}`;
  });
}

/**
 * Pick `environments[envName]` and validate it; throws one EnvironmentConfigError
 * naming every missing or invalid key (and the runner settings, checked with the
 * application's own settings schema).
 */
export function loadEnvironmentConfig(envName: unknown, environments: unknown): EnvironmentConfig {
  const known =
    typeof environments === 'object' && environments !== null ? Object.keys(environments).sort() : [];
  if (typeof envName !== 'string' || envName === '') {
    throw new EnvironmentConfigError(
      `Choose an environment with -c env=<name>; cdk.json defines: ${known.join(', ') || '(none)'}`,
    );
  }
  const raw = (environments as Record<string, unknown> | undefined)?.[envName];
  if (raw === undefined) {
    throw new EnvironmentConfigError(
      `No context.environments.${envName} in cdk.json; it defines: ${known.join(', ') || '(none)'}`,
    );
  }
  const where = `context.environments.${envName}`;
  const parsed = EnvironmentSchema.safeParse(raw);
  if (!parsed.success) {
    throw new EnvironmentConfigError(
      `Invalid ${where}:\n  ${describeIssues(where, parsed.error.issues).join('\n  ')}`,
    );
  }
  const context = parsed.data;

  const problems: string[] = [];
  for (const key of STACK_OWNED_SETTINGS) {
    if (key in context.settings) {
      problems.push(
        `${where}.settings.${key}: set by the stack from network and its own resources; remove it`,
      );
    }
  }
  const settings = SettingsSchema.safeParse(context.settings);
  if (!settings.success) problems.push(...describeIssues(`${where}.settings`, settings.error.issues));
  const { network } = context;
  if (network.availabilityZones.length !== network.runnerSubnetIds.length) {
    problems.push(
      `${where}.network.availabilityZones: needs one zone per runner subnet (${network.runnerSubnetIds.length}), in the same order`,
    );
  }
  if (problems.length > 0 || !settings.success) {
    throw new EnvironmentConfigError(`Invalid ${where}:\n  ${problems.join('\n  ')}`);
  }

  return {
    ...context,
    name: envName,
    isDev: envName === 'dev',
    rawSettings: context.settings,
    parsedSettings: settings.data,
    secretsPrefix: context.secretsPrefix ?? `remote-worker/${envName}/`,
  };
}
