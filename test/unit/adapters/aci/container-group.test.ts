import { describe, expect, it } from 'vitest';
import {
  ATTEMPT_TAG,
  containerGroupFor,
  RUN_ID_TAG,
} from '../../../../shared/adapters/aci/container-group.ts';
import { LaunchRejectedError } from '../../../../shared/domain/errors.ts';
import { newRun, type Run } from '../../../../shared/domain/run.ts';
import type { TaskSpec } from '../../../../shared/domain/task.ts';
import type { PreparedTask } from '../../../../shared/ports/launcher.ts';

const run: Run = {
  ...newRun(
    { id: 'run-aci', kind: 'vm', targetId: 't', asset: 'a.yml', requestedBy: 'alice', timeoutSeconds: 60 },
    new Date().toISOString(),
  ),
  attempt: 2,
};
const prepared = (secretEnv: Record<string, string> = {}): PreparedTask =>
  ({ spec: { secretVars: [] } as unknown as TaskSpec, secretEnv, secretRefs: {} }) as PreparedTask;

describe('containerGroupFor', () => {
  it('runs one Linux container once, the spec plain and every secret as a secureValue', () => {
    const group = containerGroupFor(
      { location: 'westeurope' },
      'runner',
      run,
      'img',
      prepared({ RW_SECRET_0: 'canary' }),
      undefined,
    );

    expect(group).toMatchObject({
      location: 'westeurope',
      osType: 'Linux',
      restartPolicy: 'Never',
      tags: { [RUN_ID_TAG]: 'run-aci', [ATTEMPT_TAG]: '2' },
    });
    expect(group.containers[0]?.resources).toEqual({ requests: { cpu: 1, memoryInGB: 2 } });
    expect(group.containers[0]?.environmentVariables).toEqual([
      { name: 'RW_TASK', value: JSON.stringify({ secretVars: [] }) },
      { name: 'RW_RUN_ID', value: 'run-aci' },
      { name: 'RW_SECRET_0', secureValue: 'canary' },
    ]);
    expect(group.subnetIds).toBeUndefined();
    expect(group.imageRegistryCredentials).toBeUndefined();
  });

  it('adds the subnets and, with a password, the registry credentials', () => {
    const group = containerGroupFor(
      {
        location: 'westeurope',
        subnetIds: ['/subnets/a'],
        registry: { server: 'r.azurecr.io', username: 'puller', password: 'unused-here' },
        cpu: 2,
        memoryInGB: 4,
      },
      'runner',
      run,
      'img',
      prepared(),
      'pw',
    );

    expect(group.subnetIds).toEqual([{ id: '/subnets/a' }]);
    expect(group.imageRegistryCredentials).toEqual([
      { server: 'r.azurecr.io', username: 'puller', password: 'pw' },
    ]);
    expect(group.containers[0]?.resources).toEqual({ requests: { cpu: 2, memoryInGB: 4 } });
  });

  it('refuses a secret env that would replace the launcher’s own', () => {
    const build = () =>
      containerGroupFor(
        { location: 'westeurope' },
        'runner',
        run,
        'img',
        prepared({ RW_RUN_ID: 'x' }),
        undefined,
      );

    expect(build).toThrow(LaunchRejectedError);
    expect(build).toThrow("Secret environment RW_RUN_ID would replace the launcher's own");
  });
});
