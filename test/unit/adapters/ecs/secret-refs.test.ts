import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  mayHaveMintedSecrets,
  mayReferenceSecrets,
  perRunEnvsOf,
  perRunSecretReferences,
  secretEnvNamesOf,
  storedSecretReferences,
} from '../../../../shared/adapters/ecs/secret-refs.ts';
import { SecretsManagerRunSecrets } from '../../../../shared/adapters/secrets-manager/run-secrets.ts';
import { LaunchRejectedError } from '../../../../shared/domain/errors.ts';
import { newRun, RUN_KINDS, type Run } from '../../../../shared/domain/run.ts';
import type { TaskSpec } from '../../../../shared/domain/task.ts';
import type { PreparedTask } from '../../../../shared/ports/launcher.ts';
import { useMoto } from '../../../support/moto.ts';

const run = (kind: Run['kind'] = 'vm', id = 'run-refs'): Run =>
  newRun(
    { id, kind, targetId: 't-1', asset: 'a.yml', requestedBy: 'alice', timeoutSeconds: 60 },
    new Date().toISOString(),
  );

const prepared = (spec: Partial<TaskSpec>, rest: Partial<PreparedTask> = {}): PreparedTask =>
  ({ spec: { secretVars: [], ...spec } as TaskSpec, secretEnv: {}, secretRefs: {}, ...rest }) as PreparedTask;

describe('secretEnvNamesOf', () => {
  it('names every env the spec expects a secret in, once', () => {
    const spec = {
      secretVars: [
        { var: 'a', env: 'RW_SECRET_0' },
        { var: 'b', env: 'RW_SECRET_1' },
      ],
      secretEnvNames: ['RW_SECRET_1', 'KUBECONFIG'],
      sshKeyEnv: 'RW_SSH_KEY',
    } as unknown as TaskSpec;

    expect(secretEnvNamesOf(spec)).toEqual(['RW_SECRET_0', 'RW_SECRET_1', 'KUBECONFIG', 'RW_SSH_KEY']);
  });
});

describe('mayHaveMintedSecrets and mayReferenceSecrets', () => {
  it('follow the run kind: every kind may reference secrets, three may have minted values', () => {
    expect(RUN_KINDS.filter((kind) => mayHaveMintedSecrets(run(kind)))).toEqual([
      'cluster_play',
      'database_play',
      'k8s_op',
    ]);
    expect(RUN_KINDS.every((kind) => mayReferenceSecrets(run(kind)))).toBe(true);
  });
});

describe('perRunEnvsOf', () => {
  it('names minted values and submitted passwords, not stored secrets', () => {
    const spec = {
      secretVars: [
        { var: 'db_password', env: 'RW_SECRET_0' },
        { var: 'ansible_password', env: 'RW_SECRET_1' },
      ],
    };
    const p = prepared(spec, {
      secretRefs: {
        RW_SECRET_0: 'db-admin',
        RW_SECRET_1: 'remote-worker/test/runs/r/ansible_password',
        RW_SSH_KEY: 'rw/ssh-key',
      },
      secretEnv: { KUBECONFIG: 'apiVersion: v1\n' },
    });
    const envs = ['RW_SECRET_0', 'RW_SECRET_1', 'RW_SSH_KEY', 'KUBECONFIG'];
    expect([...perRunEnvsOf({ ephemeralSecrets: ['ansible_password'] }, p, envs)]).toEqual([
      'RW_SECRET_1',
      'KUBECONFIG',
    ]);
    expect([...perRunEnvsOf({}, p, envs)]).toEqual(['KUBECONFIG']);
  });
});

describe('secret references on moto', () => {
  const moto = useMoto();
  let runSecrets: SecretsManagerRunSecrets;
  const secretArn = async (name: string) =>
    `arn:aws:secretsmanager:us-east-1:123456789012:secret:${name}-AbCdEf`;

  beforeAll(() => {
    runSecrets = new SecretsManagerRunSecrets({
      client: new SecretsManagerClient(moto().clientConfig()),
      prefix: 'remote-worker/test/runs/',
    });
  });

  it('references stored secrets by ARN; stores minted values as per-run secrets and passes only their ARN', async () => {
    const p = prepared(
      {},
      {
        secretRefs: { RW_SECRET_0: 'db-admin', RW_SECRET_1: 'remote-worker/test/runs/run-minted/pw' },
        secretEnv: { KUBECONFIG: 'apiVersion: v1\nkind: Config\n' },
      },
    );
    const stored = await storedSecretReferences({ secretArn }, p, ['RW_SECRET_0']);
    expect(stored).toEqual([
      {
        name: 'RW_SECRET_0',
        valueFrom: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:db-admin-AbCdEf',
      },
    ]);

    const perRun = await perRunSecretReferences({ runSecrets }, run('cluster_play', 'run-minted'), p, [
      'RW_SECRET_1',
      'KUBECONFIG',
    ]);
    // A submitted password is already stored under its name; a minted value is stored now.
    expect(perRun.RW_SECRET_1).toBe('remote-worker/test/runs/run-minted/pw');
    expect(perRun.KUBECONFIG).toMatch(
      /^arn:aws:secretsmanager:.*:secret:remote-worker\/test\/runs\/run-minted\//,
    );
    expect(JSON.stringify(perRun)).not.toContain('apiVersion');
    await runSecrets.deleteFor('run-minted');
  });

  it('refuses a secret nothing provides, a minted value without a store, and an unresolvable name', async () => {
    const unresolvable = async () => {
      throw new Error('ResourceNotFoundException');
    };

    await expect(storedSecretReferences({ secretArn }, prepared({}), ['RW_SECRET_9'])).rejects.toThrow(
      'The task expects secret RW_SECRET_9, but nothing provides it',
    );
    await expect(perRunSecretReferences({}, run(), prepared({}), ['RW_SECRET_9'])).rejects.toThrow(
      'The task expects secret RW_SECRET_9, but nothing provides it',
    );
    await expect(
      perRunSecretReferences({}, run(), prepared({}, { secretEnv: { KUBECONFIG: 'x' } }), ['KUBECONFIG']),
    ).rejects.toThrow(/has no per-run secret store/);
    await expect(
      storedSecretReferences(
        { secretArn: unresolvable },
        prepared({}, { secretRefs: { RW_SECRET_0: 'gone' } }),
        ['RW_SECRET_0'],
      ),
    ).rejects.toThrow(LaunchRejectedError);
  });
});
