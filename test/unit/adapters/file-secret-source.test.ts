import { chmodSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileSecretSource } from '../../../shared/adapters/local/secret-source.ts';
import { NotFoundError, SettingsInvalidError } from '../../../shared/domain/errors.ts';

describe('FileSecretSource', () => {
  let dataDir: string;
  let path: string;
  let secrets: FileSecretSource;

  const writeSecrets = (content: string, mode = 0o600): void => {
    writeFileSync(path, content, { mode });
    chmodSync(path, mode); // the umask may have narrowed `mode` above
  };

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'rw-secrets-'));
    path = join(dataDir, 'secrets.json');
    secrets = new FileSecretSource({ dataDir });
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('reads a secret from a 0600 secrets.json', async () => {
    writeSecrets(JSON.stringify({ 'db-admin': 's3cr3t-value' }));

    expect(await secrets.get('db-admin')).toBe('s3cr3t-value');
  });

  it('answers NotFoundError naming the secret, never a value', async () => {
    writeSecrets(JSON.stringify({ present: 's3cr3t-value' }));

    const attempt = secrets.get('absent');

    await expect(attempt).rejects.toBeInstanceOf(NotFoundError);
    await expect(attempt).rejects.toThrow('"absent"');
    await expect(attempt).rejects.not.toThrow('s3cr3t-value');
  });

  it('treats a missing file as no secrets', async () => {
    await expect(secrets.get('anything')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('refuses a 0644 file and says how to fix it', async () => {
    writeSecrets(JSON.stringify({ 'db-admin': 's3cr3t-value' }), 0o644);

    const attempt = secrets.get('db-admin');

    await expect(attempt).rejects.toBeInstanceOf(SettingsInvalidError);
    await expect(attempt).rejects.toThrow(`chmod 600 ${path}`);
    await expect(attempt).rejects.not.toThrow('s3cr3t-value');
  });

  it('refuses a file readable by its group only', async () => {
    writeSecrets(JSON.stringify({ a: 'b' }), 0o640);

    await expect(secrets.get('a')).rejects.toBeInstanceOf(SettingsInvalidError);
  });

  it('re-reads the file when it changes', async () => {
    writeSecrets(JSON.stringify({ token: 'first' }));
    expect(await secrets.get('token')).toBe('first');

    writeSecrets(JSON.stringify({ token: 'second-value' }));
    utimesSync(path, new Date(), new Date(Date.now() + 5000));

    expect(await secrets.get('token')).toBe('second-value');
  });

  it('refuses invalid JSON without quoting the file', async () => {
    writeSecrets('{"token": "s3cr3t-value",}');

    const attempt = secrets.get('token');

    await expect(attempt).rejects.toBeInstanceOf(SettingsInvalidError);
    await expect(attempt).rejects.not.toThrow('s3cr3t');
  });

  it('refuses a value that is not a string, naming the key', async () => {
    writeSecrets(JSON.stringify({ port: 5432 }));

    await expect(secrets.get('port')).rejects.toThrow('"port"');
  });
});
