import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';

/*
 * The EC2 query API by hand: the only EC2 calls Remote Worker makes are these
 * few, at bootstrap against an emulator, and not worth the EC2 SDK client in
 * every install. Requests are signed (SigV4) like any SDK call.
 */

const NAME_TAG = 'remote-worker-runners';

async function ec2Call(
  endpoint: string,
  region: string,
  action: string,
  params: Record<string, string>,
): Promise<string> {
  const url = new URL(endpoint);
  const body = new URLSearchParams({ Action: action, Version: '2016-11-15', ...params }).toString();
  const signer = new SignatureV4({
    service: 'ec2',
    region,
    credentials: defaultProvider(),
    sha256: Hash.bind(null, 'sha256'),
  });
  const signed = await signer.sign({
    method: 'POST',
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port === '' ? {} : { port: Number(url.port) }),
    path: url.pathname,
    headers: { host: url.host, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body,
  });
  const response = await fetch(url, { method: 'POST', headers: signed.headers, body });
  const text = await response.text();
  if (!response.ok) throw new Error(`EC2 ${action} answered ${response.status}: ${text.slice(0, 300)}`);
  return text;
}

const first = (xml: string, tag: string): string | undefined =>
  new RegExp(`<${tag}>([^<]+)</${tag}>`).exec(xml)?.[1];

/**
 * A subnet and security group for runner tasks on an emulator (moto answers
 * RunTask only for subnets in a VPC with DNS hostnames, shared/NOTES.md):
 * the ones tagged `Name=remote-worker-runners` if a previous bootstrap made
 * them, else a new VPC (10.77.0.0/16, DNS hostnames on), subnet and group,
 * tagged so the next start finds them.
 *
 * @example
 * const { subnetId, securityGroupId } = await ensureRunnerNetwork('http://127.0.0.1:5000', 'us-east-1');
 */
export async function ensureRunnerNetwork(
  endpoint: string,
  region: string,
): Promise<{ subnetId: string; securityGroupId: string }> {
  const call = (action: string, params: Record<string, string> = {}) =>
    ec2Call(endpoint, region, action, params);
  const filter = { 'Filter.1.Name': 'tag:Name', 'Filter.1.Value.1': NAME_TAG };
  const existingSubnet = first(await call('DescribeSubnets', filter), 'subnetId');
  const existingGroup = first(await call('DescribeSecurityGroups', filter), 'groupId');
  if (existingSubnet !== undefined && existingGroup !== undefined) {
    return { subnetId: existingSubnet, securityGroupId: existingGroup };
  }
  const tags = (type: string) => ({
    'TagSpecification.1.ResourceType': type,
    'TagSpecification.1.Tag.1.Key': 'Name',
    'TagSpecification.1.Tag.1.Value': NAME_TAG,
  });
  const vpcId = first(await call('CreateVpc', { CidrBlock: '10.77.0.0/16', ...tags('vpc') }), 'vpcId');
  if (vpcId === undefined) throw new Error('EC2 CreateVpc answered no vpcId');
  await call('ModifyVpcAttribute', { VpcId: vpcId, 'EnableDnsHostnames.Value': 'true' });
  const subnetId = first(
    await call('CreateSubnet', { VpcId: vpcId, CidrBlock: '10.77.0.0/24', ...tags('subnet') }),
    'subnetId',
  );
  const securityGroupId = first(
    await call('CreateSecurityGroup', {
      VpcId: vpcId,
      GroupName: NAME_TAG,
      GroupDescription: 'Remote Worker runner tasks',
      ...tags('security-group'),
    }),
    'groupId',
  );
  if (subnetId === undefined || securityGroupId === undefined) {
    throw new Error('EC2 CreateSubnet or CreateSecurityGroup answered no id');
  }
  return { subnetId, securityGroupId };
}
