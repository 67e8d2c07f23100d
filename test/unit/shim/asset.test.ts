import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveAsset } from '../../../runners/shim/asset.ts';
import type { TaskSpec } from '../../../shared/domain/task-spec.ts';

/** A real HTTP server on loopback: the asset bodies the shim downloads. */
let server: Server;
let base: string;
let scratch: string;
beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'rw-shim-asset-'));
  server = createServer((req, res) => {
    if (req.url?.startsWith('/site.yml')) res.end('- hosts: all\n');
    else if (req.url?.startsWith('/big')) res.end('x'.repeat(2048));
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.close();
  rmSync(scratch, { recursive: true, force: true });
});

const spec = (asset: TaskSpec['asset']): TaskSpec => ({
  runId: 'run-1',
  kind: 'cluster_play',
  asset,
  assetType: 'playbook',
  inventory: { all: { hosts: {} } },
  extraVars: {},
  secretVars: [],
  timeoutSeconds: 60,
});
const fresh = (): string => join(mkdtempSync(join(scratch, 'w-')), 'asset');
const never = new AbortController().signal;

describe('resolveAsset', () => {
  it('answers a file asset as it is, and refuses one that is not a file', async () => {
    expect(await resolveAsset(spec({ kind: 'file', path: '/etc/hostname' }), fresh(), {}, never)).toBe(
      '/etc/hostname',
    );
    await expect(resolveAsset(spec({ kind: 'file', path: scratch }), fresh(), {}, never)).rejects.toThrow(
      `the asset ${scratch} is not a file`,
    );
  });

  it('downloads a url asset into a private file named after its path', async () => {
    const path = await resolveAsset(
      spec({ kind: 'url', url: `${base}/site.yml?sig=s3cret` }),
      fresh(),
      {},
      never,
    );

    expect(path.endsWith('/site.yml')).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe('- hosts: all\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('refuses a body over RW_ASSET_MAX_BYTES, a failed fetch without its query, and other schemes', async () => {
    await expect(
      resolveAsset(spec({ kind: 'url', url: `${base}/big` }), fresh(), { RW_ASSET_MAX_BYTES: '1024' }, never),
    ).rejects.toThrow(`the asset ${base}/big is larger than the 1024-byte limit`);
    await expect(
      resolveAsset(spec({ kind: 'url', url: `${base}/nope.yml?sig=s3cret` }), fresh(), {}, never),
    ).rejects.toThrow(
      new RegExp(
        `^could not fetch the asset ${base}/nope.yml: HTTP 404 \\(the asset was removed from storage after the run was submitted\\)$`,
      ),
    );
    await expect(
      resolveAsset(spec({ kind: 'url', url: 'file:///etc/passwd' }), fresh(), {}, never),
    ).rejects.toThrow('the asset URL must be http or https, not file:');
  });

  it('stops a download once the shim is told to stop', async () => {
    const abort = new AbortController();
    abort.abort();

    await expect(
      resolveAsset(spec({ kind: 'url', url: `${base}/site.yml` }), fresh(), {}, abort.signal),
    ).rejects.toThrow(/^could not fetch the asset/);
  });
});
