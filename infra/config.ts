import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { z } from 'zod';
import { type Settings, settingsSchema } from '../shared/config/settings.ts';

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

const HOSTNAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
const CLOUDFRONT_CERTIFICATE_ARN = /^arn:aws[a-z-]*:acm:us-east-1:\d{12}:certificate\/[0-9a-f-]{36}$/;

/**
 * The web console as a static site (S3 + CloudFront) signing in with OIDC
 * against `jwt.issuer`. Optional: without it no site is deployed and the API
 * answers no browser origin. It needs `jwt` (a browser cannot sign SigV4
 * requests) and a public client registered at the issuer.
 */
const ConsoleSchema = z
  .strictObject({
    oidc: z.strictObject({
      /** The public client (no secret) registered at the issuer, with the console's URL as redirect URI. */
      clientId: z.string().min(1),
      /** Scopes asked for at sign-in; default `openid` plus `jwt.scopes` (the ones the authorizer requires). */
      scopes: z.array(z.string().min(1)).min(1).optional(),
      /**
       * The token sent to the API: the access token (its `aud` must be in `jwt.audience`), or the ID token
       * for issuers whose access tokens are opaque or not for this API (its `aud` is the client id, and it
       * carries no scopes: only with no `jwt.scopes`).
       */
      bearer: z.enum(['access_token', 'id_token']).default('access_token'),
    }),
    /** A custom domain for the console; needs `certificateArn`. Without it: the distribution's own domain. */
    domainName: z
      .string()
      .regex(HOSTNAME, 'must be a lower-case host name such as console.example.com')
      .optional(),
    /** ACM certificate for `domainName`, in us-east-1 (CloudFront reads certificates only there). */
    certificateArn: arn('an ACM certificate ARN in us-east-1', CLOUDFRONT_CERTIFICATE_ARN).optional(),
    /**
     * More origins the console may call besides the API and the issuer: an issuer whose token endpoint is on
     * another host (Cognito's hosted domain, for one).
     */
    connectOrigins: z.array(z.url({ protocol: /^https$/ })).default([]),
  })
  .refine((c) => (c.domainName === undefined) === (c.certificateArn === undefined), {
    message: 'set both domainName and certificateArn, or neither',
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
  console: ConsoleSchema.optional(),
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
  const settings = settingsSchema().safeParse(context.settings);
  if (!settings.success) problems.push(...describeIssues(`${where}.settings`, settings.error.issues));
  const { network } = context;
  if (network.availabilityZones.length !== network.runnerSubnetIds.length) {
    problems.push(
      `${where}.network.availabilityZones: needs one zone per runner subnet (${network.runnerSubnetIds.length}), in the same order`,
    );
  }
  problems.push(...consoleProblems(where, context));
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

/** What the console needs from the rest of the environment: an issuer to sign in with, and scopes and audience that match it. */
function consoleProblems(where: string, context: EnvironmentContext): string[] {
  const site = context.console;
  if (site === undefined) return [];
  if (context.jwt === undefined) {
    return [
      `${where}.console: needs jwt (the console signs in with OIDC against jwt.issuer; a browser cannot sign SigV4 requests)`,
    ];
  }
  const problems: string[] = [];
  const asked = new Set(site.oidc.scopes ?? []);
  if (site.oidc.scopes !== undefined) {
    if (!asked.has('openid')) problems.push(`${where}.console.oidc.scopes: must include openid`);
    const missing = context.jwt.scopes.filter((s) => !asked.has(s));
    if (missing.length > 0) {
      problems.push(
        `${where}.console.oidc.scopes: must include the scopes the API requires (jwt.scopes): ${missing.join(', ')}`,
      );
    }
  }
  if (site.oidc.bearer === 'id_token' && !context.jwt.audience.includes(site.oidc.clientId)) {
    problems.push(
      `${where}.console.oidc.bearer: an ID token's audience is the client id; add ${site.oidc.clientId} to jwt.audience`,
    );
  }
  if (site.oidc.bearer === 'id_token' && context.jwt.scopes.length > 0) {
    problems.push(
      `${where}.console.oidc.bearer: an ID token carries no scopes, and the authorizer requires jwt.scopes; send the access token or leave jwt.scopes empty`,
    );
  }
  return problems;
}

/** The scopes the console asks for at sign-in. */
export function consoleScopes(config: EnvironmentConfig): string[] {
  return config.console?.oidc.scopes ?? ['openid', ...(config.jwt?.scopes ?? [])];
}
