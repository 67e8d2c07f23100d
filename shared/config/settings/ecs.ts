import * as z from '../../lib/zod.ts';
import { defaulted, idList, list, optionalText } from './fields.ts';

/** The ECS runner (AWS Fargate): cluster, network and task definitions. */
export const ecsSettings = {
  // ECS plumbing shared by the Ansible and Kubernetes runners.
  ansible_ecs_cluster: optionalText,
  ansible_ecs_subnet_id: () =>
    z.optional(idList(/^subnet-[0-9a-f]+$/, 'a subnet id such as subnet-0123456789abcdef0')),
  // Checked for shape because a typo here only shows up as a failed RunTask much later.
  ansible_ecs_security_group_ids: () =>
    z.optional(
      list(
        z
          .string()
          .check(z.regex(/^sg-[0-9a-f]{8,17}$/, 'must be a security group id such as sg-0123456789abcdef0')),
      ),
    ),
  ansible_ecs_assign_public_ip: defaulted(false, () => z.boolean()),
  ansible_ecs_execution_role_arn: optionalText,
  /**
   * Local mode: runner image → ECS task definition (family, family:revision or ARN) whose `runner`
   * container runs that image; a deployed stack makes its own (ECS_TASK_DEFINITIONS).
   */
  ansible_ecs_task_definitions: () =>
    z.optional(z.record(z.string().check(z.minLength(1)), z.string().check(z.minLength(1)))),
  /** Local mode: the CloudWatch Logs group those task definitions' awslogs driver writes to. */
  ansible_ecs_log_group: optionalText,
};
