import {
  DescribeTaskDefinitionCommand,
  ECSClient,
  ListTaskDefinitionsCommand,
  RegisterTaskDefinitionCommand,
} from '@aws-sdk/client-ecs';
import { beforeAll, describe, expect, it } from 'vitest';
import { PerRunTaskDefinitions } from '../../../../shared/adapters/ecs/task-definitions.ts';
import { LaunchRejectedError } from '../../../../shared/domain/errors.ts';
import { newRun, type Run } from '../../../../shared/domain/run.ts';
import { useMoto } from '../../../support/moto.ts';

/** PerRunTaskDefinitions against moto's ECS (its differences from AWS: test/integration/ecs-launcher.test.ts). */
describe('PerRunTaskDefinitions on moto', () => {
  const moto = useMoto();
  let ecs: ECSClient;
  const run = (id: string): Run =>
    newRun(
      {
        id,
        kind: 'vm',
        targetId: 'vm-1',
        asset: 'a.yml',
        secrets: [{ var: 'db_password', secret: 'db-admin' }],
        requestedBy: 'alice',
        timeoutSeconds: 60,
      },
      new Date().toISOString(),
    );
  const active = async (family: string) =>
    (await ecs.send(new ListTaskDefinitionsCommand({ familyPrefix: family, status: 'ACTIVE' })))
      .taskDefinitionArns ?? [];

  beforeAll(async () => {
    ecs = new ECSClient(moto().clientConfig());
    await ecs.send(
      new RegisterTaskDefinitionCommand({
        family: 'base',
        requiresCompatibilities: ['FARGATE'],
        networkMode: 'awsvpc',
        cpu: '512',
        memory: '1024',
        executionRoleArn: 'arn:aws:iam::123456789012:role/exec',
        containerDefinitions: [
          {
            name: 'runner',
            image: 'img',
            essential: true,
            secrets: [{ name: 'KEEP', valueFrom: 'arn:keep' }],
          },
          { name: 'sidecar', image: 'side', essential: false },
        ],
      }),
    );
    await ecs.send(
      new RegisterTaskDefinitionCommand({
        family: 'no-role',
        containerDefinitions: [{ name: 'runner', image: 'img', memory: 512 }],
      }),
    );
  });

  it('registers one revision per run with the secrets added to the runner container, and reuses it', async () => {
    const defs = new PerRunTaskDefinitions({ ecs, containerName: 'runner', familyPrefix: 'rw-run-' });
    const secrets = [
      { name: 'RW_SECRET_0', valueFrom: 'arn:aws:secretsmanager:us-east-1:1:secret:db-admin' },
    ];

    const arn = await defs.register(run('run.1'), 'base', secrets);
    const again = await defs.register(run('run.1'), 'base', secrets);

    expect(again).toBe(arn);
    expect(arn).toContain(':task-definition/rw-run-run_1:');
    const { taskDefinition } = await ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: arn }));
    const runner = taskDefinition?.containerDefinitions?.find((c) => c.name === 'runner');
    const sidecar = taskDefinition?.containerDefinitions?.find((c) => c.name === 'sidecar');
    expect(runner?.secrets).toEqual([{ name: 'KEEP', valueFrom: 'arn:keep' }, ...secrets]);
    expect(sidecar?.secrets ?? []).toEqual([]);
    expect(taskDefinition?.executionRoleArn).toBe('arn:aws:iam::123456789012:role/exec');
  });

  it('deregisters every revision of the run, idempotently', async () => {
    const defs = new PerRunTaskDefinitions({ ecs, containerName: 'runner' });
    await defs.register(run('run-2'), 'base', [{ name: 'RW_SECRET_0', valueFrom: 'arn:x' }]);
    expect(await active('remote-worker-run-run-2')).toHaveLength(1);

    await defs.deregister('run-2');
    await defs.deregister('run-2');

    expect(await active('remote-worker-run-run-2')).toEqual([]);
  });

  it('refuses a base definition without an execution role or without the runner container', async () => {
    const defs = new PerRunTaskDefinitions({ ecs, containerName: 'runner' });
    const other = new PerRunTaskDefinitions({ ecs, containerName: 'ansible' });

    await expect(defs.register(run('run-3'), 'no-role', [])).rejects.toThrow(/has no execution role/);
    await expect(other.register(run('run-4'), 'base', [])).rejects.toThrow(LaunchRejectedError);
    await expect(other.register(run('run-4'), 'base', [])).rejects.toThrow(/has no container named ansible/);
  });
});
