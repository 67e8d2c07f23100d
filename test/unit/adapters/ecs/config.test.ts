import { describe, expect, it } from 'vitest';
import { ecsNetworkFromSettings } from '../../../../shared/adapters/ecs/config.ts';
import { loadSettings } from '../../../../shared/config/settings.ts';

describe('ecsNetworkFromSettings', () => {
  it('reads one subnet or several, comma-separated, with the security groups and public IP choice', () => {
    const settings = loadSettings({
      env: {
        ANSIBLE_ECS_SUBNET_ID: 'subnet-0a1b2c3d, subnet-4e5f6a7b',
        ANSIBLE_ECS_SECURITY_GROUP_IDS: 'sg-0123456789abcdef0,sg-0fedcba987654321f',
        ANSIBLE_ECS_ASSIGN_PUBLIC_IP: 'true',
      },
    });

    expect(ecsNetworkFromSettings(settings)).toEqual({
      subnets: ['subnet-0a1b2c3d', 'subnet-4e5f6a7b'],
      securityGroups: ['sg-0123456789abcdef0', 'sg-0fedcba987654321f'],
      assignPublicIp: true,
    });
  });

  it('keeps tasks private and leaves the security groups to the VPC default unless told', () => {
    expect(
      ecsNetworkFromSettings(loadSettings({ env: { ANSIBLE_ECS_SUBNET_ID: 'subnet-0a1b2c3d' } })),
    ).toEqual({
      subnets: ['subnet-0a1b2c3d'],
      securityGroups: [],
      assignPublicIp: false,
    });
  });

  it('is undefined when no subnet is configured: ECS is not configured', () => {
    expect(ecsNetworkFromSettings(loadSettings({ env: {} }))).toBeUndefined();
  });
});
