import { REGION } from './aws-config.ts';

export interface MotoNetwork {
  readonly vpcId: string;
  readonly availabilityZones: string[];
  readonly runnerSubnetIds: string[];
  readonly runnerSecurityGroupIds: string[];
}

/**
 * The default VPC moto creates in the region: two of its subnets (one per
 * zone) and its default security group, in the shape of cdk.json's
 * `network`. EC2's query API by hand (the EC2 client is not a dependency);
 * moto routes an unsigned call by the service named in the Authorization
 * header while IAM is not enforced.
 */
export async function motoDefaultNetwork(endpoint: string): Promise<MotoNetwork> {
  const call = async (action: string) => {
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `AWS4-HMAC-SHA256 Credential=test/20250101/${REGION}/ec2/aws4_request, SignedHeaders=host, Signature=x`,
      },
      body: `Action=${action}&Version=2016-11-15`,
    });
    return response.text();
  };
  const subnets = [...(await call('DescribeSubnets')).matchAll(/<item>(.*?)<\/item>/gs)]
    .map((m) => ({
      id: /<subnetId>(subnet-[0-9a-f]+)<\/subnetId>/.exec(m[1] ?? '')?.[1],
      zone: /<availabilityZone>([a-z0-9-]+)<\/availabilityZone>/.exec(m[1] ?? '')?.[1],
      vpc: /<vpcId>(vpc-[0-9a-f]+)<\/vpcId>/.exec(m[1] ?? '')?.[1],
    }))
    .filter((s) => s.id !== undefined && s.zone !== undefined && s.vpc !== undefined)
    .sort((a, b) => String(a.zone).localeCompare(String(b.zone)))
    .slice(0, 2);
  const groups = await call('DescribeSecurityGroups');
  const group = /<groupId>(sg-[0-9a-f]+)<\/groupId>(?:(?!<groupId>).)*<groupName>default<\/groupName>/s.exec(
    groups,
  )?.[1];
  const [first] = subnets;
  if (first?.vpc === undefined || subnets.length < 2 || group === undefined) {
    throw new Error(`moto has no default VPC with two subnets in ${REGION}`);
  }
  return {
    vpcId: first.vpc,
    availabilityZones: subnets.map((s) => String(s.zone)),
    runnerSubnetIds: subnets.map((s) => String(s.id)),
    runnerSecurityGroupIds: [group],
  };
}
