import { describe, expect, it } from 'vitest';
import { parseTaskSpec } from '../../../runners/shim/spec.ts';
import { LOCALHOST_VARS } from '../../../shared/domain/inventory.ts';
import type { TaskSpec } from '../../../shared/domain/task.ts';

function taskSpec(overrides: Partial<TaskSpec> = {}): TaskSpec {
  return {
    runId: 'run-test',
    kind: 'cluster_play',
    asset: { kind: 'file', path: '/srv/assets/echo-var.yml' },
    assetType: 'playbook',
    inventory: { all: { hosts: { localhost: { ...LOCALHOST_VARS } } } },
    extraVars: {},
    secretVars: [],
    timeoutSeconds: 120,
    ...overrides,
  };
}

describe('parseTaskSpec', () => {
  it('checks the connection-material fields and refuses env that would override the shim or a secret', () => {
    const ok = taskSpec({
      secretEnvNames: ['KUBECONFIG'],
      sshKeyEnv: 'RW_SECRET_1',
      env: { PORTAINER_URL: 'u' },
    });

    expect(parseTaskSpec(JSON.stringify(ok)).env).toEqual({ PORTAINER_URL: 'u' });
    expect(() =>
      parseTaskSpec(JSON.stringify({ ...ok, secretEnvNames: ['A B'], sshKeyEnv: 3, env: { X: 1 } })),
    ).toThrow(/secretEnvNames must be .*sshKeyEnv must be .*env must be an object/);
    expect(() =>
      parseTaskSpec(JSON.stringify({ ...ok, env: { RW_RESULT_DIR: '/x', NO_COLOR: '0' } })),
    ).toThrow('env must not set RW_RESULT_DIR, NO_COLOR:');
    expect(() =>
      parseTaskSpec(JSON.stringify({ ...ok, env: { KUBECONFIG: '/x', RW_SECRET_1: 'y' } })),
    ).toThrow(/env must not set RW_SECRET_1: .*env must not set KUBECONFIG, RW_SECRET_1: a secret arrives/);
  });

  it('accepts a spec and names every problem of a bad one', () => {
    expect(parseTaskSpec(JSON.stringify(taskSpec())).runId).toBe('run-test');
    expect(() => parseTaskSpec('{"asset": {}, "secretVars": [{"var": "a b", "env": "X"}]}')).toThrow(
      /runId.*kind.*asset.*assetType.*inventory.*extraVars.*secretVars.*timeoutSeconds/,
    );
  });
});
