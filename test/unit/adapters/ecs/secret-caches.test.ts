import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { beforeAll, describe, expect, it } from 'vitest';
import { CallCounter } from '../../../../bench/support/call-counter.ts';
import { describeSecretArn } from '../../../../shared/adapters/ecs/secret-arn.ts';
import { sharedFamily } from '../../../../shared/adapters/ecs/shared-definitions.ts';
import { LaunchRejectedError } from '../../../../shared/domain/errors.ts';
import { useMoto } from '../../../support/moto.ts';

const moto = useMoto();

describe('describeSecretArn cache (moto)', () => {
  let client: SecretsManagerClient;
  const counter = new CallCounter();
  beforeAll(async () => {
    client = counter.count('SecretsManager', new SecretsManagerClient(moto().clientConfig()));
    await client.send(new CreateSecretCommand({ Name: 'rw/ssh-key', SecretString: 'key' }));
  });

  it('describes a name once per resolver within the expiry, and again after it', async () => {
    let now = 0;
    const secretArn = describeSecretArn(client, { ttlMs: 1000, nowMs: () => now });

    const calls = await counter.measure(async () => {
      const arns = await Promise.all([secretArn('rw/ssh-key'), secretArn('rw/ssh-key')]);
      expect(await secretArn('rw/ssh-key')).toBe(arns[0]);
      expect(arns[0]).toMatch(/^arn:aws:secretsmanager:us-east-1:\d+:secret:rw\/ssh-key-/);
    });
    expect(calls.get('SecretsManager.DescribeSecret')).toBe(1);

    now = 1001;
    const later = await counter.measure(async () => {
      await secretArn('rw/ssh-key');
    });
    expect(later.get('SecretsManager.DescribeSecret')).toBe(1);
  });

  it('does not keep a failure: a secret created after a miss is found by the next call', async () => {
    const secretArn = describeSecretArn(client);
    await expect(secretArn('rw/late')).rejects.toThrow(LaunchRejectedError);
    await client.send(new CreateSecretCommand({ Name: 'rw/late', SecretString: 'v' }));

    expect(await secretArn('rw/late')).toMatch(/:secret:rw\/late-/);
  });
});

describe('sharedFamily', () => {
  const ssh = { name: 'RW_SSH_KEY', valueFrom: 'arn:aws:secretsmanager:us-east-1:1:secret:ssh-AbC' };
  const db = { name: 'RW_SECRET_0', valueFrom: 'arn:aws:secretsmanager:us-east-1:1:secret:db-XyZ' };

  it('names the same content the same, whatever the order of the references', () => {
    expect(sharedFamily('rw-run-', 'rw-ansible', 'runner', [ssh, db])).toBe(
      sharedFamily('rw-run-', 'rw-ansible', 'runner', [db, ssh]),
    );
    expect(sharedFamily('rw-run-', 'rw-ansible', 'runner', [ssh])).toMatch(/^rw-run-shared-[0-9a-f]{16}$/);
  });

  it('names different content differently', () => {
    const names = new Set([
      sharedFamily('rw-run-', 'rw-ansible', 'runner', [ssh]),
      sharedFamily('rw-run-', 'rw-ansible', 'runner', [db]),
      sharedFamily('rw-run-', 'rw-ansible', 'runner', [ssh, db]),
      sharedFamily('rw-run-', 'rw-ansible:2', 'runner', [ssh]),
      sharedFamily('rw-run-', 'rw-ansible', 'other', [ssh]),
      sharedFamily('rw-run-', 'rw-ansible', 'runner', [{ ...ssh, valueFrom: `${ssh.valueFrom}d` }]),
    ]);
    expect(names.size).toBe(6);
  });
});
