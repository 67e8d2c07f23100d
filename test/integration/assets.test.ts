import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalMode, startLocalMode } from '../../bin/local-mode/local-mode.ts';
import { MAX_ASSET_BYTES } from '../../shared/app/assets.ts';
import { type Api, client, LOCALHOST_TARGET, REPO } from '../e2e/harness.ts';

const idleExecutor = {
  name: 'process' as const,
  start: () => new Promise<never>(() => {}),
  adopt: () => new Promise<never>(() => {}),
  reapOrphans: async () => [],
};

const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64');

describe('POST /assets and GET /assets (local filesystem backend)', () => {
  let local: LocalMode;
  let api: Api;
  let sandbox: string;
  let root: string;

  beforeAll(async () => {
    sandbox = mkdtempSync(join(tmpdir(), 'rw-assets-api-'));
    root = join(sandbox, 'assets');
    local = await startLocalMode({
      cwd: REPO,
      env: {
        PORT: '0',
        REMOTE_WORKER_DATA_DIR: join(sandbox, 'data'),
        REMOTE_WORKER_TOKEN: 'secret-token-for-tests',
        LOCAL_STORAGE_PATH: root,
        LOG_LEVEL: 'ERROR',
        PATH: process.env.PATH,
      },
      executor: idleExecutor,
    });
    api = client(local.url, local.token);
  });
  afterAll(() => local?.close({ drainMs: 0 }));

  it('uploads a playbook, lists it with its badge, and a run can use it', async () => {
    const up = await api('POST', '/assets', {
      path: 'site/deploy.yml',
      contentBase64: b64('- hosts: all\n'),
    });

    expect(up.status).toBe(201);
    expect(up.body).toEqual({ path: 'site/deploy.yml', size: 13, type: 'playbook', replaced: false });
    expect(readFileSync(join(root, 'site/deploy.yml'), 'utf8')).toBe('- hosts: all\n');
    await api('PUT', '/targets/localhost', LOCALHOST_TARGET);
    const run = await api('POST', '/runs', { kind: 'vm', targetId: 'localhost', asset: 'site/deploy.yml' });
    expect(run.status).toBe(202);
  });

  it('badges each type by its extension', async () => {
    for (const path of ['t/a.sh', 't/b.ps1', 't/c.rpm', 't/d.deb', 't/e.yaml']) {
      expect((await api('POST', '/assets', { path, contentBase64: b64('x') })).status).toBe(201);
    }

    const { body } = await api('GET', '/assets');

    expect(body.assets.filter((a: { path: string }) => a.path.startsWith('t/'))).toEqual([
      { path: 't/a.sh', size: 1, type: 'script' },
      { path: 't/b.ps1', size: 1, type: 'powershell' },
      { path: 't/c.rpm', size: 1, type: 'rpm' },
      { path: 't/d.deb', size: 1, type: 'deb' },
      { path: 't/e.yaml', size: 1, type: 'playbook' },
    ]);
  });

  it('refuses to overwrite without overwrite: true (409), and replaces with it (200)', async () => {
    await api('POST', '/assets', { path: 'keep.sh', contentBase64: b64('first') });

    const again = await api('POST', '/assets', { path: 'keep.sh', contentBase64: b64('second') });
    expect(again.status).toBe(409);
    expect(again.body.type).toBe('https://remote-worker.dev/problems/asset-exists');
    expect(readFileSync(join(root, 'keep.sh'), 'utf8')).toBe('first');

    const replaced = await api('POST', '/assets', {
      path: 'keep.sh',
      contentBase64: b64('second'),
      overwrite: true,
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.replaced).toBe(true);
    expect(readFileSync(join(root, 'keep.sh'), 'utf8')).toBe('second');
  });

  it.each([
    ['a .. traversal', '../escape.yml', 400, 'asset-outside-root'],
    ['a deeper traversal', 'a/../../escape.yml', 400, 'asset-outside-root'],
    ['an absolute path', '/tmp/escape.yml', 400, 'asset-outside-root'],
    ['a hidden segment', '.ssh/authorized_keys.sh', 400, 'validation-failed'],
    ['a backslash', 'a\\..\\escape.yml', 400, 'validation-failed'],
    ['an extension no wrapper runs', 'tool.exe', 400, 'validation-failed'],
    // Names that read as another name: `evil\u202Elmy.sh` shows as `evilhs.yml`.
    ['a bidirectional override', 'evil\u202Elmy.sh', 400, 'validation-failed'],
    ['a right-to-left isolate', 'a\u2067b.yml', 400, 'validation-failed'],
    ['a byte-order mark', '\uFEFFsite.yml', 400, 'validation-failed'],
    ['a zero-width space', 'si\u200Bte.yml', 400, 'validation-failed'],
    ['a line separator', 'a\u2028b.yml', 400, 'validation-failed'],
  ])('refuses %s and writes nothing', async (_name, path, status, type) => {
    const before = readdirSync(root).sort();

    const res = await api('POST', '/assets', { path, contentBase64: b64('x') });

    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body.type).toBe(`https://remote-worker.dev/problems/${type}`);
    expect(readdirSync(root).sort()).toEqual(before);
    expect(existsSync(join(sandbox, 'escape.yml'))).toBe(false);
  });

  it('refuses an empty asset with 400 and writes nothing', async () => {
    const before = readdirSync(root).sort();

    const res = await api('POST', '/assets', { path: 'empty.sh', contentBase64: '' });

    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(['body.contentBase64']);
    expect(readdirSync(root).sort()).toEqual(before);
  });

  it('refuses content that is not base64', async () => {
    const res = await api('POST', '/assets', { path: 'x.sh', contentBase64: 'not base64!' });

    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(['body.contentBase64']);
  });

  it('takes an asset of exactly the limit and refuses one byte more with 413', async () => {
    const exact = await api('POST', '/assets', {
      path: 'big/exact.deb',
      contentBase64: b64(Buffer.alloc(MAX_ASSET_BYTES, 1)),
    });
    const over = await api('POST', '/assets', {
      path: 'big/over.deb',
      contentBase64: b64(Buffer.alloc(MAX_ASSET_BYTES + 1, 1)),
    });

    expect(exact.status).toBe(201);
    expect(over.status).toBe(413);
    expect(existsSync(join(root, 'big/over.deb'))).toBe(false);
  });

  it('keeps the 256 KiB body limit on every other route', async () => {
    const res = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'localhost',
      asset: 'site/deploy.yml',
      extraVars: { blob: 'x'.repeat(300 * 1024) },
    });

    expect(res.status).toBe(413);
  });

  it.each([
    ['POST', '/assets'],
    ['GET', '/assets'],
  ])('answers 401 to %s %s without the token', async (method, path) => {
    expect((await fetch(local.url + path, { method })).status).toBe(401);
  });
});
