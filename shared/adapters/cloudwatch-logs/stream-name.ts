/**
 * The stream the ECS `awslogs` driver writes a task's output to:
 * `<awslogs-stream-prefix>/<container name>/<task id>`, the task id being the
 * last segment of the task ARN.
 *
 * @example
 * awslogsStreamName('run', 'runner', 'arn:aws:ecs:eu-west-1:123:task/rw/0f3c…') // 'run/runner/0f3c…'
 */
export function awslogsStreamName(prefix: string, container: string, taskArnOrId: string): string {
  const taskId = taskArnOrId.split('/').at(-1) ?? taskArnOrId;
  return `${prefix}/${container}/${taskId}`;
}
