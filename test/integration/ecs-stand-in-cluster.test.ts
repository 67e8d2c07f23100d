import { DescribeTasksCommand, ECSClient, RunTaskCommand, StopTaskCommand } from '@aws-sdk/client-ecs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { describeTasks, listTaskArns } from '../../tools/ecs-task-stand-in/cluster.ts';
import { freezeMotoTasks } from '../../tools/ecs-task-stand-in/moto.ts';
import { useMoto } from '../support/moto.ts';
import { setUpEcsRunner } from './ecs-moto.ts';

/** How the ECS task stand-in reads the cluster (cluster.ts) and freezes moto's tasks (moto.ts), against moto. */
const moto = useMoto();
const CLUSTER = 'stand-in-cluster';
let ecs: ECSClient;
let network: { subnet: string; securityGroup: string };

beforeAll(() => {
  ecs = new ECSClient(moto().clientConfig());
});
afterAll(() => ecs?.destroy());
beforeEach(async () => {
  await moto().reset();
  network = await setUpEcsRunner(ecs, moto().endpoint, {
    cluster: CLUSTER,
    family: 'stand-in-cluster',
    image: 'example/runner:1',
  });
});

async function runTasks(count: number): Promise<string[]> {
  const { tasks = [] } = await ecs.send(
    new RunTaskCommand({
      cluster: CLUSTER,
      taskDefinition: 'stand-in-cluster',
      launchType: 'FARGATE',
      count,
      networkConfiguration: {
        awsvpcConfiguration: { subnets: [network.subnet], securityGroups: [network.securityGroup] },
      },
    }),
  );
  return tasks.map((t) => t.taskArn ?? '');
}

describe('listTaskArns and describeTasks', () => {
  it('list the running and the stopped tasks apart, and describe them all', async () => {
    const arns = await runTasks(3);
    const [stopped = ''] = arns;
    await ecs.send(new StopTaskCommand({ cluster: CLUSTER, task: stopped, reason: 'test' }));

    const running = await listTaskArns(ecs, CLUSTER, 'RUNNING');
    const described = await describeTasks(ecs, CLUSTER, arns);

    expect(new Set(running)).toEqual(new Set(arns.slice(1)));
    expect(await listTaskArns(ecs, CLUSTER, 'STOPPED')).toEqual([stopped]);
    expect(described.map((t) => t.taskArn).sort()).toEqual([...arns].sort());
  });

  it('describe nothing for no tasks without calling DescribeTasks with an empty list', async () => {
    expect(await describeTasks(ecs, CLUSTER, [])).toEqual([]);
  });
});

describe('freezeMotoTasks', () => {
  it('keeps a task where RunTask left it however often it is described', async () => {
    await freezeMotoTasks(moto().endpoint);
    const [arn = ''] = await runTasks(1);

    for (let i = 0; i < 4; i += 1)
      await ecs.send(new DescribeTasksCommand({ cluster: CLUSTER, tasks: [arn] }));
    const [task] = await describeTasks(ecs, CLUSTER, [arn]);

    expect(task?.lastStatus).toBe('RUNNING');
  });

  it("fails with the state manager's answer on an endpoint without one", async () => {
    await expect(freezeMotoTasks(`${moto().endpoint}/not-moto`)).rejects.toThrow(/state manager answered/);
  });
});
