import { SecretManagerServiceClient } from '@google-cloud/secret-manager';
import { OAuth2Client } from 'google-auth-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GcpSecretManagerSecretSource } from '../../shared/adapters/gcp-secret-manager/secret-source.ts';
import { NotFoundError, ValidationError } from '../../shared/domain/errors.ts';
import { type FakeGcpSecretManager, startFakeGcpSecretManager } from '../support/fake-gcp-secret-manager.ts';

/**
 * The real @google-cloud/secret-manager client (REST transport, a real
 * google-auth-library OAuth2Client) against a loopback fake of Secret
 * Manager's versions.access (test/support/fake-gcp-secret-manager.ts lists
 * where it differs from Google).
 */
describe('GcpSecretManagerSecretSource against a loopback Secret Manager', () => {
  const KEY =
    '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n';
  let fake: FakeGcpSecretManager;
  let client: SecretManagerServiceClient;
  let source: GcpSecretManagerSecretSource;

  beforeAll(async () => {
    fake = await startFakeGcpSecretManager();
    fake.addVersion('acme', 'ssh-ansible-keypair', 'an old key');
    fake.addVersion('acme', 'ssh-ansible-keypair', KEY);
    fake.addVersion('acme', 'ssh-ansible-keypair', 'a disabled key', { enabled: false });
    fake.addVersion('acme', 'retired', 'gone', { enabled: false });
    fake.addVersion('acme', 'binary', new Uint8Array([0xff, 0xfe, 0x00]));
    fake.addVersion('other', 'elsewhere', 'not in acme');
    const auth = new OAuth2Client();
    auth.setCredentials({ access_token: fake.token, expiry_date: Date.now() + 3_600_000 });
    client = new SecretManagerServiceClient({
      apiEndpoint: fake.host,
      port: fake.port,
      protocol: 'http',
      fallback: true,
      authClient: auth,
    });
    source = new GcpSecretManagerSecretSource({ project: 'acme', client });
  });
  afterAll(async () => {
    await client?.close();
    await fake?.stop();
  });

  it('reads the latest enabled version as text', async () => {
    await expect(source.get('ssh-ansible-keypair')).resolves.toBe(KEY);
    expect(fake.requests.at(-1)).toEqual({
      method: 'GET',
      path: '/v1/projects/acme/secrets/ssh-ansible-keypair/versions/latest:access',
    });
  });

  it('is a NotFoundError naming the secret and project when absent, in another project or without an enabled version', async () => {
    for (const name of ['missing', 'elsewhere', 'retired']) {
      const failure = await source.get(name).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(NotFoundError);
      expect((failure as Error).message).toContain(`"${name}"`);
      expect((failure as Error).message).toContain('project acme');
    }
  });

  it('refuses a name Secret Manager cannot hold, before any request', async () => {
    const before = fake.requests.length;
    for (const name of ['ssh/key', 'has space', '', 'x'.repeat(256)]) {
      await expect(source.get(name)).rejects.toBeInstanceOf(ValidationError);
    }
    expect(fake.requests.length).toBe(before);
  });

  it('refuses binary data that is not UTF-8, without quoting it', async () => {
    const failure = (await source.get('binary').catch((e: unknown) => e)) as Error;
    expect(failure.message).toBe(
      'Secret "binary" holds binary data that is not UTF-8 text; store it as text',
    );
  });

  it('passes any other failure on, naming the secret and never a value', async () => {
    fake.failNext(403);
    const failure = (await source.get('ssh-ansible-keypair').catch((e: unknown) => e)) as Error;
    expect(failure).not.toBeInstanceOf(NotFoundError);
    expect(failure.message).toContain('"ssh-ansible-keypair" could not be read');
    expect(failure.message).not.toContain('OPENSSH');
  });
});
