import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_ASSETS, localAssetRoot } from '../../bin/local-mode/asset-root.ts';
import { type LocalMode, startLocalMode } from '../../bin/local-mode/local-mode.ts';
import { type Api, client, REPO } from '../e2e/harness.ts';

const idleExecutor = {
  name: 'process' as const,
  start: () => new Promise<never>(() => {}),
  adopt: () => new Promise<never>(() => {}),
  reapOrphans: async () => [],
};

const sandbox = () => mkdtempSync(join(tmpdir(), 'rw-asset-root-'));

describe('localAssetRoot', () => {
  const seed = sandbox();
  mkdirSync(join(seed, 'hello'));
  writeFileSync(join(seed, 'hello/site.yml'), '- hosts: all\n');

  it('defaults to <dataDir>/assets, seeded with the examples on first start', async () => {
    const dataDir = join(sandbox(), 'data');

    const root = await localAssetRoot({ settings: {}, cwd: '/nowhere', dataDir, seedFrom: seed });

    expect(root).toBe(join(dataDir, 'assets'));
    expect(readFileSync(join(root, 'hello/site.yml'), 'utf8')).toBe('- hosts: all\n');
  });

  it("never seeds over an existing root: the operator's changes and deletions stay", async () => {
    const dataDir = sandbox();
    const root = await localAssetRoot({ settings: {}, cwd: '/nowhere', dataDir, seedFrom: seed });
    writeFileSync(join(root, 'hello/site.yml'), '# mine\n');
    writeFileSync(join(root, 'own.sh'), 'echo mine\n');
    const deletedLater = join(root, 'hello/site.yml');

    await localAssetRoot({ settings: {}, cwd: '/nowhere', dataDir, seedFrom: seed });
    expect(readFileSync(join(root, 'hello/site.yml'), 'utf8')).toBe('# mine\n');
    unlinkSync(deletedLater);
    await localAssetRoot({ settings: {}, cwd: '/nowhere', dataDir, seedFrom: seed });

    expect(existsSync(deletedLater)).toBe(false);
    expect(readFileSync(join(root, 'own.sh'), 'utf8')).toBe('echo mine\n');
  });

  it('uses local_storage_path as given, resolved against cwd, and never seeds it', async () => {
    const cwd = sandbox();

    const root = await localAssetRoot({
      settings: { local_storage_path: 'my-assets' },
      cwd,
      dataDir: join(cwd, 'data'),
      seedFrom: seed,
    });

    expect(root).toBe(join(cwd, 'my-assets'));
    expect(existsSync(root)).toBe(false);
    expect(existsSync(join(cwd, 'data', 'assets'))).toBe(false);
  });
});

describe('local mode without LOCAL_STORAGE_PATH', () => {
  let local: LocalMode;
  let api: Api;
  let dataDir: string;
  const uploaded = `api-polish-${process.pid}.sh`;

  beforeAll(async () => {
    dataDir = join(sandbox(), 'data');
    local = await startLocalMode({
      cwd: REPO,
      env: {
        PORT: '0',
        REMOTE_WORKER_DATA_DIR: dataDir,
        REMOTE_WORKER_TOKEN: 'secret-token-for-tests',
        LOG_LEVEL: 'ERROR',
        PATH: process.env.PATH,
      },
      executor: idleExecutor,
    });
    api = client(local.url, local.token);
  });
  afterAll(async () => {
    await local?.close({ drainMs: 0 });
    // Before the fix the upload landed in the checkout: never leave it there.
    rmSync(join(EXAMPLE_ASSETS, uploaded), { force: true });
  });

  it('serves the examples (the README walkthrough) from the data directory', async () => {
    const { body } = await api('GET', '/assets');

    expect(body.assets.map((a: { path: string }) => a.path)).toContain('hello/site.yml');
    expect(existsSync(join(dataDir, 'assets/hello/site.yml'))).toBe(true);
  });

  it('writes uploads under the data directory, never into the source tree', async () => {
    const up = await api('POST', '/assets', {
      path: uploaded,
      contentBase64: Buffer.from('echo hi\n').toString('base64'),
    });

    expect(up.status).toBe(201);
    expect(readFileSync(join(dataDir, 'assets', uploaded), 'utf8')).toBe('echo hi\n');
    expect(existsSync(join(EXAMPLE_ASSETS, uploaded))).toBe(false);
  });
});
