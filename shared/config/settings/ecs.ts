import * as z from 'zod';
import { defaulted, idList, list, text } from './fields.ts';

/** The ECS runner (AWS Fargate): cluster, network and task definitions. */
export const ecsSettings = {
  // ECS plumbing shared by the Ansible and Kubernetes runners.
  ansible_ecs_cluster: () => text().optional(),
  ansible_ecs_subnet_id: () =>
    idList(/^subnet-[0-9a-f]+$/, 'a subnet id such as subnet-0123456789abcdef0').optional(),
  // Checked for shape because a typo here only shows up as a failed RunTask much later.
  ansible_ecs_security_group_ids: () =>
    list(
      z.string().regex(/^sg-[0-9a-f]{8,17}$/, 'must be a security group id such as sg-0123456789abcdef0'),
    ).optional(),
  ansible_ecs_assign_public_ip: defaulted(false, () => z.boolean()),
  ansible_ecs_execution_role_arn: () => text().optional(),
  /**
   * Local mode: runner image → ECS task definition (family, family:revision or ARN) whose `runner`
   * container runs that image; a deployed stack makes its own (ECS_TASK_DEFINITIONS).
   */
  ansible_ecs_task_definitions: () => z.record(z.string().min(1), z.string().min(1)).optional(),
  /** Local mode: the CloudWatch Logs group those task definitions' awslogs driver writes to. */
  ansible_ecs_log_group: () => text().optional(),
};
