import {
  CreateAccessKeyCommand,
  CreateUserCommand,
  IAMClient,
  PutUserPolicyCommand,
} from '@aws-sdk/client-iam';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { type AccountCredentials, awsConfig, UNCHECKED } from './aws-config.ts';

/**
 * An IAM user allowed everything: the test's own identity once IAM is enforced
 * (seeding, reading state to assert on, and ECS itself inside the task
 * stand-in). It stands for AWS's services and the operator, never for a function.
 */
export async function createAdmin(
  endpoint: string,
  userName: string,
): Promise<AccountCredentials & { arn: string }> {
  const iam = new IAMClient(awsConfig(endpoint, UNCHECKED));
  try {
    const { User } = await iam.send(new CreateUserCommand({ UserName: userName }));
    await iam.send(
      new PutUserPolicyCommand({
        UserName: userName,
        PolicyName: 'everything',
        PolicyDocument: JSON.stringify({
          Version: '2012-10-17',
          Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }],
        }),
      }),
    );
    const { AccessKey } = await iam.send(new CreateAccessKeyCommand({ UserName: userName }));
    return {
      arn: User?.Arn ?? '',
      accessKeyId: AccessKey?.AccessKeyId ?? '',
      secretAccessKey: AccessKey?.SecretAccessKey ?? '',
    };
  } finally {
    iam.destroy();
  }
}

/**
 * `sts:AssumeRole` of each role, with the session named after who uses it
 * (moto's denials then name the function). Must run before enforcement is on:
 * moto then checks the trust policy against the caller, and these roles trust
 * only lambda.amazonaws.com / ecs-tasks.amazonaws.com, which no test identity is.
 */
export async function assumeRoles(
  endpoint: string,
  roles: Readonly<Record<string, string>>,
): Promise<Record<string, AccountCredentials>> {
  const sts = new STSClient(awsConfig(endpoint, UNCHECKED));
  try {
    const assumed: Record<string, AccountCredentials> = {};
    for (const [session, roleArn] of Object.entries(roles)) {
      const { Credentials } = await sts.send(
        new AssumeRoleCommand({ RoleArn: roleArn, RoleSessionName: session, DurationSeconds: 3600 }),
      );
      assumed[session] = {
        accessKeyId: Credentials?.AccessKeyId ?? '',
        secretAccessKey: Credentials?.SecretAccessKey ?? '',
        sessionToken: Credentials?.SessionToken ?? '',
      };
    }
    return assumed;
  } finally {
    sts.destroy();
  }
}

/** From the next request on, moto checks every call's signature and its identity's policies. */
export async function enforceIam(endpoint: string): Promise<void> {
  const response = await fetch(`${endpoint}/moto-api/reset-auth`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain' },
    body: '0',
  });
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`moto reset-auth answered ${response.status}`);
}
