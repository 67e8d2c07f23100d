import { describe, expect, it } from 'vitest';
import { ecsSettings } from '../../../../shared/config/settings/ecs.ts';
import { parseArea } from './area.ts';

describe('ECS settings', () => {
  it('take subnet and security group ids of the right shape', () => {
    const parsed = parseArea(ecsSettings, {
      ansible_ecs_subnet_id: 'subnet-0123456789abcdef0',
      ansible_ecs_security_group_ids: 'sg-0123456789abcdef0',
    });
    expect(parsed.value?.ansible_ecs_security_group_ids).toEqual(['sg-0123456789abcdef0']);
    expect(parsed.value?.ansible_ecs_assign_public_ip).toBe(false);
  });

  it('refuse a mistyped network id', () => {
    const parsed = parseArea(ecsSettings, {
      ansible_ecs_subnet_id: 'subnet-xyz',
      ansible_ecs_security_group_ids: 'sg-1',
    });
    expect(parsed.problems).toEqual(['ansible_ecs_subnet_id', 'ansible_ecs_security_group_ids.0']);
  });
});
