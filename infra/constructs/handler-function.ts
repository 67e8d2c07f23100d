import { AssetHashType, type Duration, type RemovalPolicy } from 'aws-cdk-lib';
import { type IGrantable, type IPrincipal, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import {
  Architecture,
  Code,
  Function as LambdaFunction,
  LoggingFormat,
  Runtime,
} from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { splitBundle } from './split-bundle.ts';

/**
 * A function's memory unless its spec says otherwise. Lambda's own default,
 * 128 MB, is less than a task function's code takes once its cloud SDKs have
 * loaded (test/infra/lambda-bundle.test.ts), and gives the cold start a
 * sliver of a core.
 */
export const DEFAULT_MEMORY_MIB = 512;

export interface HandlerFunctionProps {
  /** Path of the handler module, relative to the project root. */
  readonly entry: string;
  /** Name of the exported handler in `entry`. */
  readonly handler?: string;
  readonly description: string;
  readonly timeout: Duration;
  readonly memorySize?: number;
  readonly environment: Readonly<Record<string, string>>;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  readonly projectRoot: string;
  /** Bundle the ACI, Cloud Run and Kubernetes SDKs (see HandlerSpec.controlsTasks). */
  readonly controlsTasks?: boolean;
  /** Bundle the EC2, Azure Compute and GCE listing SDKs (see HandlerSpec.discoversVms). */
  readonly discoversVms?: boolean;
}

/**
 * One Lambda handler: esbuild-bundled, code-split ESM on nodejs22.x / arm64, with its own
 * role and log group. The role starts empty — no AWSLambdaBasicExecutionRole —
 * and gets write access to this function's log group only, then whatever the
 * stack grants it explicitly.
 */
export class HandlerFunction extends Construct implements IGrantable {
  readonly fn: LambdaFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: HandlerFunctionProps) {
    super(scope, id);
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `${props.description} (Lambda execution role)`,
    });
    // The log group's Arn attribute already ends in ":*", so this names no wildcard of our own.
    this.logGroup.grantWrite(this.role);

    this.fn = new LambdaFunction(this, 'Function', {
      // The asset directory holds index.mjs and, beside it, the chunks it loads on demand (infra/bundling.ts).
      code: Code.fromAsset(props.projectRoot, {
        assetHashType: AssetHashType.OUTPUT,
        bundling: splitBundle(props.projectRoot, props.entry, {
          controlsTasks: props.controlsTasks === true,
          discoversVms: props.discoversVms === true,
        }),
      }),
      handler: `index.${props.handler ?? 'handler'}`,
      description: props.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? DEFAULT_MEMORY_MIB,
      timeout: props.timeout,
      role: this.role,
      logGroup: this.logGroup,
      loggingFormat: LoggingFormat.JSON,
      environment: { ...props.environment },
    });
  }

  get grantPrincipal(): IPrincipal {
    return this.role;
  }
}
