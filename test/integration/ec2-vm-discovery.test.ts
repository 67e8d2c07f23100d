import {
  DescribeImagesCommand,
  EC2Client,
  RunInstancesCommand,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { beforeEach, describe, expect, it } from 'vitest';
import { Ec2VmDiscovery } from '../../shared/adapters/ec2/vm-discovery.ts';
import { useMoto } from '../support/moto.ts';

/**
 * The EC2 adapter against moto's DescribeInstances. moto pages with
 * MaxResults/NextToken like EC2 (checked here with more instances than a
 * page); it hands out private addresses in 10.0.0.0/8 and no public ones
 * unless asked, as a default VPC without auto-assign would.
 */
describe('Ec2VmDiscovery on moto', () => {
  const moto = useMoto();
  let ec2: EC2Client;
  beforeEach(async () => {
    await moto().reset();
    ec2 = new EC2Client(moto().clientConfig());
  });

  const discovery = () =>
    new Ec2VmDiscovery({ regions: ['us-east-1'], clientFor: () => new EC2Client(moto().clientConfig()) });

  it('maps every non-terminated instance, across pages, with its Name tag and state', async () => {
    const images = (await ec2.send(new DescribeImagesCommand({}))).Images ?? [];
    const linux = images.find((i) => i.Platform === undefined)?.ImageId;
    const made = await ec2.send(
      new RunInstancesCommand({
        ImageId: linux,
        MinCount: 12,
        MaxCount: 12,
        TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'Name', Value: 'fleet' }] }],
      }),
    );
    const gone = made.Instances?.[0]?.InstanceId ?? '';
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [gone] }));
    const source = new Ec2VmDiscovery({
      regions: ['us-east-1'],
      clientFor: () => {
        const client = new EC2Client(moto().clientConfig());
        // Small pages, so the loop over NextToken is exercised.
        client.middlewareStack.add(
          (next) => async (args) => {
            (args.input as { MaxResults?: number }).MaxResults = 5;
            return next(args);
          },
          { step: 'initialize' },
        );
        return client;
      },
    });

    const vms = await source.discover();

    expect(vms).toHaveLength(11);
    expect(vms.map((v) => v.cloudId)).not.toContain(gone);
    expect(vms[0]).toMatchObject({ cloud: 'aws', name: 'fleet', state: 'running', os: 'linux' });
    expect(vms[0]?.id).toBe(`aws-${vms[0]?.cloudId}`);
    expect(vms[0]?.privateAddress).toMatch(/^10\./);
  });

  it('fails naming the region and the error when EC2 refuses', async () => {
    const source = new Ec2VmDiscovery({
      regions: ['us-east-1'],
      clientFor: () => new EC2Client({ ...moto().clientConfig(), endpoint: 'http://127.0.0.1:9' }),
    });

    await expect(source.discover()).rejects.toThrow(/^EC2 DescribeInstances in us-east-1 failed: /);
    expect(discovery().cloud).toBe('aws');
  });
});
