import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer } from '../../../bin/local-mode/http-server.ts';
import { CONSOLE_CSP, loadStaticSite, pickEncoding } from '../../../bin/local-mode/static-site.ts';
import { UnauthorizedError } from '../../../shared/domain/errors.ts';

/** A fake console build: index.html, one hashed script, and things that must never be served. */
function fakeDist(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rw-site-'));
  mkdirSync(join(dir, 'static'));
  writeFileSync(
    join(dir, 'index.html'),
    '<!doctype html><script type="module" src="/static/app-1.js"></script>',
  );
  writeFileSync(join(dir, 'static', 'app-1.js'), 'console.log("app");'.repeat(50));
  writeFileSync(join(dir, 'secret.txt'), 'outside static/');
  symlinkSync('/etc/passwd', join(dir, 'static', 'passwd.js'));
  return dir;
}

describe('static site in local mode', () => {
  let url: string;
  const server = createApiServer(
    {
      'GET /healthz': Object.assign(async () => ({ statusCode: 200, body: '{}' }), { public: true }) as never,
    },
    {
      authenticate: async (event) => {
        if (event.headers.authorization !== 'Bearer t') throw new UnauthorizedError('no');
        return 'local';
      },
      site: loadStaticSite(fakeDist())!,
    },
  );
  beforeAll(async () => {
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

  it('serves index.html at / without a token, revalidated, with the CSP', async () => {
    const res = await fetch(`${url}/?from=bookmark`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.text()).toContain('/static/app-1.js');
  });

  it('serves hashed files compressed and immutable, and answers 304 to a matching ETag', async () => {
    const raw = await new Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }>(
      (ok, fail) => {
        import('node:http').then(({ get }) =>
          get(`${url}/static/app-1.js`, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => ok({ headers: res.headers, body: Buffer.concat(chunks) }));
          }).on('error', fail),
        );
      },
    );
    expect(raw.headers['content-encoding']).toBe('gzip');
    expect(raw.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(raw.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(gunzipSync(raw.body).toString()).toContain('console.log("app")');
    const again = await fetch(`${url}/static/app-1.js`, {
      headers: { 'if-none-match': String(raw.headers.etag) },
    });
    expect(again.status).toBe(304);
  });

  // 401: the path is the API's, and the API wants a token first; 400: the request target does not parse.
  it.each([
    ['/secret.txt', 401],
    ['/static/passwd.js', 401],
    ['/static/%2e%2e/secret.txt', 401],
    ['/static/..%2fsecret.txt', 401],
    ['/%2e%2e/%2e%2e/etc/passwd', 401],
    ['/static//app-1.js', 400],
  ])('serves nothing else: %s is answered %i by the API', async (path, status) => {
    const res = await fetch(url + path);
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });

  it('keeps the console off other methods', async () => {
    const res = await fetch(`${url}/`, { method: 'POST', body: 'x' });
    expect(res.status).toBe(401);
  });

  it('prefers br, then gzip, and honours q=0', () => {
    expect(pickEncoding('gzip, deflate, br')).toBe('br');
    expect(pickEncoding('br;q=0, gzip')).toBe('gzip');
    expect(pickEncoding('identity')).toBeUndefined();
    expect(pickEncoding(undefined)).toBeUndefined();
    expect(pickEncoding('*')).toBe('br');
  });

  it('is absent when the console was never built', () => {
    expect(loadStaticSite(mkdtempSync(join(tmpdir(), 'rw-empty-')))).toBeUndefined();
  });
});
