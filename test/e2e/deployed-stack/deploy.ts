import { setTimeout as sleep } from 'node:timers/promises';
import {
  CloudFormationClient,
  CreateStackCommand,
  DescribeStackResourcesCommand,
  DescribeStacksCommand,
} from '@aws-sdk/client-cloudformation';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { type AccountCredentials, awsConfig } from './aws-config.ts';

/** What CDK's default synthesizer expects of a bootstrapped account (qualifier hnb659fds). */
const BOOTSTRAP_QUALIFIER = 'hnb659fds';

type Template = { Resources: Record<string, { Type: string; Properties?: any; Metadata?: any }> } & Record<
  string,
  unknown
>;

export interface StackFunction {
  /** The construct id (`SubmitRun`, `DispatchRuns` …), which names its handler entry (infra/handlers.ts). */
  readonly id: string;
  readonly logicalId: string;
  readonly functionName: string;
  readonly roleArn: string;
  /** The role's logical id in the template. */
  readonly roleLogicalId: string;
  /**
   * Environment.Variables as the deployed function holds them, every Ref and
   * GetAtt resolved by CloudFormation — with one change: SQS queue URLs name
   * moto's endpoint instead of `sqs.<region>.amazonaws.com`. moto's
   * CloudFormation answers AWS's host (as AWS does), and the SQS client sends
   * each call to its QueueUrl's host, not to AWS_ENDPOINT_URL.
   */
  readonly environment: Readonly<Record<string, string>>;
  readonly timeoutSeconds: number;
  readonly memoryMiB: number;
  readonly logGroupName: string;
}

export interface DeployedStack {
  readonly stackName: string;
  readonly template: Template;
  /** Logical id → physical id, from DescribeStackResources. */
  readonly physicalIds: ReadonlyMap<string, string>;
  readonly outputs: Readonly<Record<string, string>>;
  /** By construct id. */
  readonly functions: Readonly<Record<string, StackFunction>>;
}

/**
 * The changes moto 5.2.1's CloudFormation needs in a template (shared/NOTES.md):
 * `AWS::KMS::Key` without Tags (moto fails on them with KeyError 'TagKey'). That
 * key only encrypts the alarm topic; nothing on the run path uses it.
 */
export function forMoto(template: Template): Template {
  const copy = structuredClone(template);
  for (const resource of Object.values(copy.Resources)) {
    if (resource.Type === 'AWS::KMS::Key' && resource.Properties !== undefined) {
      delete resource.Properties.Tags;
    }
  }
  return copy;
}

/** What `cdk bootstrap` leaves in an account and the template refers to: the version parameter and the assets bucket with each function's code object. */
export async function bootstrapLikeCdk(
  endpoint: string,
  credentials: AccountCredentials,
  template: Template,
): Promise<void> {
  const config = awsConfig(endpoint, credentials);
  const ssm = new SSMClient(config);
  const s3 = new S3Client({ ...config, forcePathStyle: true });
  try {
    await ssm.send(
      new PutParameterCommand({
        Name: `/cdk-bootstrap/${BOOTSTRAP_QUALIFIER}/version`,
        Value: '30',
        Type: 'String',
        Overwrite: true,
      }),
    );
    const codes = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::Lambda::Function')
      .map((r) => r.Properties.Code as { S3Bucket: string; S3Key: string });
    const buckets = new Set(codes.map((c) => c.S3Bucket));
    for (const Bucket of buckets) {
      await s3
        .send(
          new CreateBucketCommand({
            Bucket,
            CreateBucketConfiguration: { LocationConstraint: config.region },
          }),
        )
        .catch((error: Error) => {
          if (error.name !== 'BucketAlreadyOwnedByYou') throw error;
        });
    }
    // moto runs no Lambda, so the bytes are never read: the bundles are run from disk instead.
    for (const { S3Bucket, S3Key } of codes) {
      await s3.send(new PutObjectCommand({ Bucket: S3Bucket, Key: S3Key, Body: 'bundle run from disk' }));
    }
  } finally {
    ssm.destroy();
    s3.destroy();
  }
}

const AWS_QUEUE_URL = /^https:\/\/sqs\.[a-z0-9-]+\.amazonaws\.com(?=\/\d{12}\/)/;

function onEndpoint(variables: Record<string, string>, endpoint: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(variables).map(([name, value]) => [name, value.replace(AWS_QUEUE_URL, endpoint)]),
  );
}

/** moto's Lambda API by hand (no Lambda client among the dependencies); unsigned calls pass while IAM is not enforced. */
async function functionConfiguration(endpoint: string, region: string, name: string): Promise<any> {
  const response = await fetch(`${endpoint}/2015-03-31/functions/${encodeURIComponent(name)}/configuration`, {
    headers: {
      authorization: `AWS4-HMAC-SHA256 Credential=test/20250101/${region}/lambda/aws4_request, SignedHeaders=host, Signature=x`,
    },
  });
  const text = await response.text();
  if (!response.ok)
    throw new Error(`moto Lambda GetFunctionConfiguration ${name}: ${response.status} ${text}`);
  return JSON.parse(text);
}

/**
 * `CreateStack` with the template and wait for CREATE_COMPLETE; then read what
 * the deployed stack gives each function: name, role and resolved environment.
 * A failed create stays CREATE_IN_PROGRESS in moto, so the wait has a deadline.
 */
export async function deployStack(
  endpoint: string,
  credentials: AccountCredentials,
  stackName: string,
  template: Template,
): Promise<DeployedStack> {
  const config = awsConfig(endpoint, credentials);
  const cfn = new CloudFormationClient(config);
  try {
    await cfn.send(
      new CreateStackCommand({
        StackName: stackName,
        TemplateBody: JSON.stringify(template),
        Capabilities: ['CAPABILITY_IAM', 'CAPABILITY_NAMED_IAM'],
      }),
    );
    const deadline = Date.now() + 60_000;
    let status = '';
    let reason = '';
    let outputs: Record<string, string> = {};
    while (Date.now() < deadline) {
      const { Stacks = [] } = await cfn.send(new DescribeStacksCommand({ StackName: stackName }));
      status = Stacks[0]?.StackStatus ?? '';
      reason = Stacks[0]?.StackStatusReason ?? '';
      if (status === 'CREATE_COMPLETE') {
        outputs = Object.fromEntries((Stacks[0]?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
        break;
      }
      if (status.endsWith('FAILED') || status.startsWith('ROLLBACK')) break;
      await sleep(200);
    }
    if (status !== 'CREATE_COMPLETE') {
      throw new Error(`stack ${stackName} ended ${status || 'unknown'}${reason ? `: ${reason}` : ''}`);
    }
    const { StackResources = [] } = await cfn.send(
      new DescribeStackResourcesCommand({ StackName: stackName }),
    );
    const physicalIds = new Map(
      StackResources.map((r) => [r.LogicalResourceId ?? '', r.PhysicalResourceId ?? ''] as const),
    );

    const functions: Record<string, StackFunction> = {};
    for (const [logicalId, resource] of Object.entries(template.Resources)) {
      if (resource.Type !== 'AWS::Lambda::Function') continue;
      // `RemoteWorker-dev/SubmitRun/Function/Resource` → SubmitRun
      const id = String(resource.Metadata?.['aws:cdk:path'] ?? '').split('/')[1] ?? logicalId;
      const functionName = physicalIds.get(logicalId) ?? '';
      const deployed = await functionConfiguration(endpoint, config.region, functionName);
      const roleLogicalId = String(resource.Properties.Role?.['Fn::GetAtt']?.[0] ?? '');
      const logGroupLogicalId = String(resource.Properties.LoggingConfig?.LogGroup?.Ref ?? '');
      functions[id] = {
        id,
        logicalId,
        functionName,
        roleArn: String(deployed.Role),
        roleLogicalId,
        environment: onEndpoint(deployed.Environment?.Variables ?? {}, endpoint),
        timeoutSeconds: Number(deployed.Timeout ?? 3),
        memoryMiB: Number(deployed.MemorySize ?? 128),
        logGroupName: physicalIds.get(logGroupLogicalId) ?? `/aws/lambda/${functionName}`,
      };
    }
    return { stackName, template, physicalIds, outputs, functions };
  } finally {
    cfn.destroy();
  }
}
