import { CreateClusterCommand, type ECSClient, RegisterTaskDefinitionCommand } from '@aws-sdk/client-ecs';
import { freezeMotoTasks } from '../../tools/ecs-task-stand-in/moto.ts';

const REGION = 'us-east-1';

/*
 * moto helpers for the ECS tests; the server itself comes from test/support/moto.ts.
 */

/**
 * EC2 query API by hand (the EC2 client is not a dependency): the default
 * VPC's first subnet and its default security group, which moto creates on
 * first use. moto does not check signatures, so a fake Authorization header
 * naming the service is enough for it to route the call.
 */
export async function defaultNetwork(endpoint: string): Promise<{ subnet: string; securityGroup: string }> {
  const call = async (action: string) => {
    const res = await fetch(endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `AWS4-HMAC-SHA256 Credential=test/20250101/${REGION}/ec2/aws4_request, SignedHeaders=host, Signature=x`,
      },
      body: `Action=${action}&Version=2016-11-15`,
    });
    return res.text();
  };
  const subnet = /<subnetId>(subnet-[0-9a-f]+)<\/subnetId>/.exec(await call('DescribeSubnets'))?.[1];
  const groups = await call('DescribeSecurityGroups');
  // The default VPC's group; in the answer its id opens the item and its name comes later.
  const securityGroup =
    /<groupId>(sg-[0-9a-f]+)<\/groupId>(?:(?!<groupId>).)*<groupName>default<\/groupName>/s.exec(groups)?.[1];
  if (subnet === undefined || securityGroup === undefined) throw new Error('moto has no default VPC');
  return { subnet, securityGroup };
}

/** Freeze ECS tasks where RunTask leaves them (moto otherwise advances one step per DescribeTasks call). */
export const freezeEcsTasks = freezeMotoTasks;

/**
 * A runner cluster as the CDK stack makes one, in moto: tasks frozen in their
 * first state, the cluster, and a Fargate task definition whose `runner`
 * container runs `image` (moto needs `memory` on the container, not only on
 * the task). Returns the default subnet and security group to launch into.
 */
export async function setUpEcsRunner(
  ecs: ECSClient,
  endpoint: string,
  names: {
    readonly cluster: string;
    readonly family: string;
    readonly image: string;
    readonly taskRoleArn?: string;
  },
): Promise<{ subnet: string; securityGroup: string }> {
  await freezeEcsTasks(endpoint);
  const network = await defaultNetwork(endpoint);
  await ecs.send(new CreateClusterCommand({ clusterName: names.cluster }));
  await ecs.send(
    new RegisterTaskDefinitionCommand({
      family: names.family,
      requiresCompatibilities: ['FARGATE'],
      networkMode: 'awsvpc',
      cpu: '512',
      memory: '1024',
      executionRoleArn: 'arn:aws:iam::123456789012:role/remote-worker-task-execution',
      ...(names.taskRoleArn === undefined ? {} : { taskRoleArn: names.taskRoleArn }),
      containerDefinitions: [{ name: 'runner', image: names.image, memory: 1024, essential: true }],
    }),
  );
  return network;
}

/**
 * The settings and variables that make the `ecs` runner available to the AWS
 * composition root for a runner cluster from `setUpEcsRunner`, as the stack
 * sets them (infra/function-environment.ts), with AWS VMs' SSH key in
 * Secrets Manager under `sshKeySecret` (none: no SSH key is configured).
 */
export function ecsRunnerEnvironment(
  names: { readonly cluster: string; readonly family: string; readonly image: string },
  network: { readonly subnet: string; readonly securityGroup: string },
  sshKeySecret?: string,
): Record<string, string> {
  return {
    ECS_TASK_DEFINITIONS: JSON.stringify({ [names.image]: names.family }),
    ANSIBLE_RUNNER_AWS: 'ecs',
    ANSIBLE_LOCAL_IMAGE: names.image,
    ANSIBLE_ECS_CLUSTER: names.cluster,
    ANSIBLE_ECS_SUBNET_ID: network.subnet,
    ANSIBLE_ECS_SECURITY_GROUP_IDS: network.securityGroup,
    ANSIBLE_ECS_EXECUTION_ROLE_ARN: 'arn:aws:iam::123456789012:role/remote-worker-task-execution',
    ...(sshKeySecret === undefined ? {} : { ANSIBLE_SSH_KEY_SM_NAME: sshKeySecret }),
  };
}

/**
 * The dispatcher function's whole environment for the `ecs` runner pointed at
 * moto: the tables, queue and bucket it reads, plus {@link ecsRunnerEnvironment}
 * without an SSH key.
 */
export function ecsDispatcherEnv(
  motoEnv: Record<string, string>,
  names: {
    readonly table: string;
    readonly bucket: string;
    readonly cluster: string;
    readonly family: string;
    readonly image: string;
  },
  queueUrl: string,
  network: { readonly subnet: string; readonly securityGroup: string },
): Record<string, string> {
  return {
    ...motoEnv,
    RUNS_TABLE: names.table,
    DISPATCH_QUEUE_URL: queueUrl,
    ASSET_BUCKET: names.bucket,
    ASSET_PREFIX: 'playbooks/',
    LOG_GROUP: '/remote-worker/runs',
    LOG_LEVEL: 'SILENT',
    AWS_LAMBDA_FUNCTION_NAME: 'remote-worker-dispatcher',
    ...ecsRunnerEnvironment(names, network),
  };
}
