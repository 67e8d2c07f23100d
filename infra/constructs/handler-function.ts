import type { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { type IGrantable, type IPrincipal, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, LoggingFormat, Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { bundleDefines, lambdaBundling } from '../bundling.ts';

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
 * One Lambda handler: esbuild-bundled ESM on nodejs22.x / arm64, with its own
 * role and log group. The role starts empty — no AWSLambdaBasicExecutionRole —
 * and gets write access to this function's log group only, then whatever the
 * stack grants it explicitly.
 */
export class HandlerFunction extends Construct implements IGrantable {
  readonly fn: NodejsFunction;
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

    this.fn = new NodejsFunction(this, 'Function', {
      entry: `${props.projectRoot}/${props.entry}`,
      handler: props.handler ?? 'handler',
      projectRoot: props.projectRoot,
      depsLockFilePath: `${props.projectRoot}/package-lock.json`,
      description: props.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout,
      role: this.role,
      logGroup: this.logGroup,
      loggingFormat: LoggingFormat.JSON,
      environment: { ...props.environment },
      bundling: {
        ...lambdaBundling,
        define: bundleDefines({
          controlsTasks: props.controlsTasks === true,
          discoversVms: props.discoversVms === true,
        }),
      },
    });
  }

  get grantPrincipal(): IPrincipal {
    return this.role;
  }
}
