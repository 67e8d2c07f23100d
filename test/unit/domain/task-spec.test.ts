import { describe, expect, expectTypeOf, it } from 'vitest';
import type { K8sOperation } from '../../../shared/domain/run.ts';
import {
  ASSET_TYPES,
  checkTaskSpec,
  NOT_AN_OBJECT,
  type TaskSpec,
  taskSpecSchemas,
} from '../../../shared/domain/task-spec.ts';

const spec: TaskSpec = {
  runId: 'run-1',
  kind: 'vm',
  asset: { kind: 'url', url: 'https://assets.example/site.yml?X-Amz-Signature=abc' },
  assetType: 'playbook',
  inventory: { all: { hosts: { 'web-1': { ansible_host: '10.0.0.5' } }, vars: { ansible_user: 'ops' } } },
  extraVars: { greeting: 'hi' },
  secretVars: [{ var: 'ansible_password', env: 'RW_SECRET_0' }],
  secretEnvNames: ['PORTAINER_API_TOKEN'],
  sshKeyEnv: 'RW_SSH_KEY',
  env: { PORTAINER_URL: 'https://portainer.example' },
  timeoutSeconds: 600,
};

const problemsOf = (raw: unknown): readonly string[] => {
  const checked = checkTaskSpec(raw);
  return checked.ok ? [] : checked.problems;
};

describe('checkTaskSpec', () => {
  it('accepts a whole spec and answers it unchanged', () => {
    const checked = checkTaskSpec(JSON.parse(JSON.stringify(spec)));

    expect(checked).toEqual({ ok: true, spec });
  });

  it('accepts each k8s operation the API accepts, and refuses an unknown action', () => {
    const ops: K8sOperation[] = [
      { action: 'apply', namespace: 'eso' },
      { action: 'delete' },
      { action: 'get_secret', namespace: 'eso', name: 'token' },
      { action: 'helm_repo_add', repoName: 'eso', repoUrl: 'https://charts.example/' },
      { action: 'helm_upgrade', release: 'eso', chart: 'eso/external-secrets', version: '0.9.1' },
    ];
    for (const operation of ops) {
      expect(checkTaskSpec({ ...spec, kind: 'k8s_op', operation })).toMatchObject({ ok: true });
    }

    expect(problemsOf({ ...spec, kind: 'k8s_op', operation: { action: 'exec' } })).toEqual([
      'operation must be an object with an action',
    ]);
  });

  it('names every problem once, in the order of the fields, never a value', () => {
    const problems = problemsOf({
      asset: { kind: 'file', path: '' },
      secretVars: [{ var: 'a b', env: 'X' }],
      inventory: { all: { hosts: [] } },
      timeoutSeconds: -1,
      env: { 'BAD NAME': 'hunter2' },
    });

    expect(problems).toEqual([
      'runId must be a non-empty string',
      'kind is not a run kind',
      "asset must be { kind: 'file', path } or { kind: 'url', url }",
      'assetType is not an asset type',
      'inventory must be { all: { hosts: { … } } }',
      'extraVars must be an object',
      'secretVars must be a list of { var, env } with valid names',
      'env must be an object of NAME: "value" strings',
      'timeoutSeconds must be a non-negative number',
    ]);
    expect(problems.join(' ')).not.toContain('hunter2');
  });

  it("refuses env that sets the shim's own variables or a secret's, even beside other problems", () => {
    const problems = problemsOf({
      ...spec,
      runId: '',
      env: { PATH: '/tmp', RW_TASK: '{}', PORTAINER_API_TOKEN: 'x', RW_SSH_KEY: 'y' },
    });

    expect(problems).toEqual([
      'runId must be a non-empty string',
      "env must not set PATH, RW_TASK, RW_SSH_KEY: PATH, RW_* and the variables the shim sets for the tool are the shim's own",
      'env must not set PORTAINER_API_TOKEN, RW_SSH_KEY: a secret arrives in that variable',
    ]);
  });

  it('needs an operation for a k8s_op run', () => {
    expect(problemsOf({ ...spec, kind: 'k8s_op' })).toEqual(['a k8s_op run needs an operation']);
  });

  it('refuses what is not an object with one problem', () => {
    for (const raw of [null, [], 'spec', 3]) expect(problemsOf(raw)).toEqual([NOT_AN_OBJECT]);
  });

  it('drops fields it does not know rather than failing on them', () => {
    const checked = checkTaskSpec({ ...spec, addedLater: true });

    expect(checked.ok && 'addedLater' in checked.spec).toBe(false);
  });

  it('ranks problems in the order the schema lists its fields', () => {
    // checkTaskSpec ranks by the problem table's order: it must be the schema's own.
    const everyFieldWrong = Object.fromEntries(
      Object.keys(taskSpecSchemas().FIELDS).map((f) => [f, Symbol(f)]),
    );
    const problems = problemsOf(everyFieldWrong);
    expect(problems.map((p) => p.split(' ')[0])).toEqual(Object.keys(taskSpecSchemas().FIELDS));
  });

  it('knows the asset types the wrappers run', () => {
    expect(ASSET_TYPES).toEqual(['playbook', 'script', 'powershell', 'rpm', 'deb']);
  });

  it('types the operation exactly as the run model does', () => {
    expectTypeOf<NonNullable<TaskSpec['operation']>>().toExtend<K8sOperation>();
    expectTypeOf<K8sOperation>().toExtend<NonNullable<TaskSpec['operation']>>();
    expectTypeOf(taskSpecSchemas().TaskSpecSchema.parse(spec)).toEqualTypeOf<TaskSpec>();
  });
});
