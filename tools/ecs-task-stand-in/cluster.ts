import { DescribeTasksCommand, type ECSClient, ListTasksCommand, type Task } from '@aws-sdk/client-ecs';

/**
 * The cluster's tasks as the stand-in reads them from the emulator: every
 * page of ListTasks, and DescribeTasks in batches of 100 (its limit).
 *
 * @example
 * const tasks = await describeTasks(ecs, 'remote-worker', await listTaskArns(ecs, 'remote-worker', 'RUNNING'));
 */
export async function listTaskArns(
  ecs: ECSClient,
  cluster: string,
  desiredStatus: 'RUNNING' | 'STOPPED',
): Promise<string[]> {
  const arns: string[] = [];
  let nextToken: string | undefined;
  do {
    const page = await ecs.send(
      new ListTasksCommand({ cluster, desiredStatus, ...(nextToken === undefined ? {} : { nextToken }) }),
    );
    arns.push(...(page.taskArns ?? []));
    nextToken = page.nextToken;
  } while (nextToken !== undefined);
  return arns;
}

export async function describeTasks(
  ecs: ECSClient,
  cluster: string,
  arns: readonly string[],
): Promise<Task[]> {
  const tasks: Task[] = [];
  for (let i = 0; i < arns.length; i += 100) {
    const { tasks: page = [] } = await ecs.send(
      new DescribeTasksCommand({ cluster, tasks: arns.slice(i, i + 100) }),
    );
    tasks.push(...page);
  }
  return tasks;
}
