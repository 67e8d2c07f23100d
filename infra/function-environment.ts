import { Token, Tokenization } from 'aws-cdk-lib';
import { sealableSettings } from '../shared/config/load-settings.ts';
import { sealedSettingsEnvironment } from '../shared/config/sealed-settings.ts';
import type { EnvironmentConfig } from './config.ts';

/** Namespace of the metrics the stack derives from logs (and of Powertools metrics, when handlers emit them). */
export const METRIC_NAMESPACE = 'RemoteWorker';

export interface FunctionEnvironmentInputs {
  readonly config: EnvironmentConfig;
  readonly tableName: string;
  readonly dispatchQueueUrl: string;
  readonly relayQueueUrl: string;
  readonly assetBucket: string;
  readonly runLogGroup: string;
  readonly cluster: string;
  readonly executionRoleArn: string;
  /** Runner image → its task definition family; the dispatcher launches `ecs` runs from these. */
  readonly taskDefinitions: Readonly<Record<string, string>>;
  /** The runner container in every task definition (RUNNER_CONTAINER_NAME). */
  readonly containerName: string;
  /** The awslogs stream prefix of that container (RUNNER_LOG_STREAM_PREFIX). */
  readonly logStreamPrefix: string;
  /** Family prefix of the per-run task definitions the launcher registers, and IAM allows. */
  readonly perRunFamilyPrefix: string;
}

/** Where values minted for one run live (kubeconfig tokens, checked-out logins): under the environment's prefix. */
export const runSecretsPrefix = (secretsPrefix: string): string => `${secretsPrefix}runs/`;

/** Settings are strings in the environment: lists comma-joined, which loadSettings splits again. */
function settingValue(value: unknown): string {
  if (Array.isArray(value)) return value.map(String).join(',');
  return String(value);
}

/**
 * The environment every handler gets: exactly the variables the AWS
 * composition root validates at cold start (`readAwsEnvironment` in
 * shared/composition/aws-environment.ts), plus each runner setting the operator wrote in
 * cdk.json and the ECS settings the stack owns. The settings known at synth
 * are checked here and sealed (shared/config/sealed-settings.ts:
 * REMOTE_WORKER_SETTINGS and its digest), so a cold start does not check them
 * again; the ones the stack learns only at deploy (the cluster's name, the
 * execution role's ARN: CloudFormation references) and any a schema would not
 * take back the same are one variable each, upper-cased as loadSettings reads
 * them, and checked at cold start. Setting defaults are not copied: they stay
 * in shared/config/settings.ts.
 */
export function functionEnvironment(inputs: FunctionEnvironmentInputs): Record<string, string> {
  const settings: Record<string, unknown> = {
    ...inputs.config.rawSettings,
    // One id or several, comma-separated: ecsNetworkFromSettings splits them.
    ansible_ecs_subnet_id: inputs.config.network.runnerSubnetIds,
    ansible_ecs_security_group_ids: inputs.config.network.runnerSecurityGroupIds,
  };
  // Known only at deploy (references to the stack's own cluster and role): never sealed.
  const atDeploy: Record<string, unknown> = {
    ansible_ecs_cluster: inputs.cluster,
    ansible_ecs_execution_role_arn: inputs.executionRoleArn,
  };
  const env: Record<string, string> = {
    RUNS_TABLE: inputs.tableName,
    DISPATCH_QUEUE_URL: inputs.dispatchQueueUrl,
    RELAY_QUEUE_URL: inputs.relayQueueUrl,
    ASSET_BUCKET: inputs.assetBucket,
    LOG_GROUP: inputs.runLogGroup,
    ECS_TASK_DEFINITIONS: JSON.stringify(inputs.taskDefinitions),
    ECS_CONTAINER_NAME: inputs.containerName,
    ECS_LOG_STREAM_PREFIX: inputs.logStreamPrefix,
    ECS_TASK_FAMILY_PREFIX: inputs.perRunFamilyPrefix,
    RUN_SECRETS_PREFIX: runSecretsPrefix(inputs.config.secretsPrefix),
    LOG_LEVEL: 'INFO',
  };
  const known: Record<string, string> = {};
  for (const [key, value] of Object.entries(settings)) {
    if (value === undefined) continue;
    const text = settingValue(value);
    // A reference anywhere in the text (a list's item, say) is resolved only at deploy.
    if (Token.isUnresolved(text)) atDeploy[key] = value;
    else known[key] = text;
  }
  for (const [key, value] of Object.entries(atDeploy)) env[key.toUpperCase()] = settingValue(value);
  const { sealed, rest } = sealableSettings(known);
  if (Object.keys(sealed).length > 0) Object.assign(env, sealedSettingsEnvironment(sealed));
  for (const [key, text] of Object.entries(rest)) env[key.toUpperCase()] = text;
  return env;
}

/**
 * Lambda refuses a function whose environment is over 4 KB, measured as the
 * JSON text of its variables (its error quotes that text as "String
 * measured"), and says so only when CloudFormation deploys the function.
 */
export const LAMBDA_ENVIRONMENT_LIMIT_BYTES = 4096;

/**
 * What synth counts for a reference to one of the stack's resources, whose
 * value CloudFormation fills in at deploy: about the longest a queue URL
 * (`https://sqs.<region>.amazonaws.com/<account>/<name of up to 80>`) or a
 * role ARN with a generated name comes to.
 */
export const REFERENCE_BYTES_ESTIMATE = 160;

export interface EnvironmentSize {
  /** The variables' JSON, as Lambda measures it, with every reference left out. */
  readonly knownBytes: number;
  /** References to the stack's resources in the values (each one unknown until deploy). */
  readonly references: number;
  /** Each variable's share of `knownBytes` (its name and value, quoted, and the colon and comma), largest first. */
  readonly byVariable: readonly { readonly name: string; readonly bytes: number }[];
}

/** How big `env` is as Lambda measures it, before deploy (see EnvironmentSize). */
export function environmentSize(env: Readonly<Record<string, string>>): EnvironmentSize {
  let references = 0;
  const known: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    const fragments = Tokenization.reverseString(value);
    references += fragments.tokens.length;
    known[name] =
      fragments.tokens.length === 0
        ? value
        : String(
            fragments.mapTokens({ mapToken: () => '' }).join({ join: (left, right) => `${left}${right}` }),
          );
  }
  const bytesOf = (text: string) => Buffer.byteLength(text, 'utf8');
  const byVariable = Object.entries(known)
    .map(([name, value]) => ({ name, bytes: bytesOf(JSON.stringify({ [name]: value })) - 1 }))
    .sort((a, b) => b.bytes - a.bytes);
  return { knownBytes: bytesOf(JSON.stringify(known)), references, byVariable };
}

/**
 * A problem with `env`'s size for Lambda, or undefined: an error when what
 * synth already knows is over the limit (the deploy would fail), a warning
 * when it would be over once each reference is filled in at its estimate.
 * Names variables and sizes, never a value.
 *
 * @example
 * environmentSizeProblem({ LOG_LEVEL: 'INFO' }, "cdk.json's environments.dev.settings"); // undefined
 */
export function environmentSizeProblem(
  env: Readonly<Record<string, string>>,
  where: string,
): { readonly level: 'error' | 'warning'; readonly message: string } | undefined {
  const size = environmentSize(env);
  const limit = LAMBDA_ENVIRONMENT_LIMIT_BYTES;
  const n = (bytes: number) => bytes.toLocaleString('en-US');
  const largest = size.byVariable
    .slice(0, 3)
    .map((v) => `${v.name} ${n(v.bytes)}`)
    .join(', ');
  const cure = `Shorten or remove settings in ${where}. Largest variables (bytes): ${largest}.`;
  if (size.knownBytes > limit) {
    return {
      level: 'error',
      message:
        `The functions' environment is ${n(size.knownBytes)} bytes before its ${size.references} references ` +
        `to the stack's resources are filled in, over Lambda's limit of ${n(limit)} (the JSON of the ` +
        `variables): Lambda would refuse every function at deploy. ${cure}`,
    };
  }
  const estimate = size.knownBytes + size.references * REFERENCE_BYTES_ESTIMATE;
  if (estimate > limit) {
    return {
      level: 'warning',
      message:
        `The functions' environment is ${n(size.knownBytes)} bytes plus ${size.references} references to the ` +
        `stack's resources, filled in at deploy: about ${n(estimate)} bytes at ${REFERENCE_BYTES_ESTIMATE} ` +
        `each, over Lambda's limit of ${n(limit)}, so the deploy may fail. ${cure}`,
    };
  }
  return undefined;
}
