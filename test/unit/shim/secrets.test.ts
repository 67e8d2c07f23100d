import { describe, expect, it } from 'vitest';
import { ShimError } from '../../../runners/shim/errors.ts';
import {
  isConnectionVar,
  requireSecretEnv,
  secretPlayVars,
  secretValues,
  sshKeyFileText,
} from '../../../runners/shim/secrets.ts';
import type { TaskSpec } from '../../../shared/domain/task-spec.ts';

const spec = (overrides: Partial<TaskSpec> = {}): TaskSpec => ({
  runId: 'run-1',
  kind: 'vm',
  asset: { kind: 'file', path: '/srv/site.yml' },
  assetType: 'playbook',
  inventory: { all: { hosts: { web: {} } } },
  extraVars: {},
  secretVars: [
    { var: 'ansible_password', env: 'RW_SECRET_0' },
    { var: 'db_password', env: 'RW_SECRET_1' },
  ],
  timeoutSeconds: 60,
  ...overrides,
});

describe('secretPlayVars', () => {
  it('binds each secret var to its env value, marked unsafe so Ansible never templates it', () => {
    const env = { RW_SECRET_0: 'pw-{{ x }}', RW_SECRET_1: 'db' };

    expect(secretPlayVars(spec(), env)).toEqual({
      ansible_password: { __ansible_unsafe: 'pw-{{ x }}' },
      db_password: { __ansible_unsafe: 'db' },
    });
    expect(secretPlayVars(spec(), env, isConnectionVar)).toEqual({
      ansible_password: { __ansible_unsafe: 'pw-{{ x }}' },
    });
  });

  it('refuses a bound secret whose variable is not set, naming names only', () => {
    expect(() => secretPlayVars(spec(), { RW_SECRET_0: 'x' })).toThrow(
      new ShimError('secret variable db_password: environment variable RW_SECRET_1 is not set'),
    );
  });
});

describe('secretValues', () => {
  it('lists every secret the task holds: bound, by name, the key, kubeconfig and its credentials, the URL signature', () => {
    const kubeconfig = 'apiVersion: v1\nusers:\n- name: u\n  user:\n    token: kube-token-123\n';
    const values = secretValues(
      spec({
        secretEnvNames: ['PORTAINER_API_TOKEN'],
        sshKeyEnv: 'RW_SSH_KEY',
        asset: { kind: 'url', url: 'https://b.example/site.yml?X-Amz-Signature=sig123&X-Amz-Date=1' },
        extraVars: { ansible_password: 'plain-pw' },
      }),
      {
        RW_SECRET_0: 'bound-0',
        PORTAINER_API_TOKEN: 'ptr-token',
        RW_SSH_KEY: 'ssh-key-text',
        KUBECONFIG: kubeconfig,
        RW_REDACT_ENV: 'EXTRA',
        EXTRA: 'extra-value',
      },
    );

    expect(values).toEqual(
      expect.arrayContaining([
        'bound-0',
        'ptr-token',
        'ssh-key-text',
        kubeconfig,
        'kube-token-123',
        'X-Amz-Signature=sig123&X-Amz-Date=1',
        'sig123',
        'plain-pw',
        'extra-value',
      ]),
    );
  });

  it('skips what is not set and a kubeconfig given as a path', () => {
    expect(secretValues(spec(), { KUBECONFIG: '/home/u/.kube/config' })).toEqual([]);
  });
});

describe('requireSecretEnv', () => {
  it('refuses a listed secret env or an SSH key that is missing', () => {
    expect(() => requireSecretEnv(spec({ secretEnvNames: ['A', 'B'] }), { A: 'x' })).toThrow(
      'secret environment B is not set',
    );
    expect(() => requireSecretEnv(spec({ sshKeyEnv: 'K' }), { K: '  \n' })).toThrow(
      'the SSH key variable K is not set',
    );
    expect(() =>
      requireSecretEnv(spec({ secretEnvNames: ['A'], sshKeyEnv: 'K' }), { A: '', K: 'k' }),
    ).not.toThrow();
  });
});

describe('sshKeyFileText', () => {
  it('gives the key LF line ends and the final newline OpenSSH insists on', () => {
    expect(sshKeyFileText('-----BEGIN-----\r\nabc\r\n-----END-----')).toBe(
      '-----BEGIN-----\nabc\n-----END-----\n',
    );
    expect(sshKeyFileText('key\n')).toBe('key\n');
  });
});
