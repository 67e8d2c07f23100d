import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalMode, startLocalMode } from '../../bin/local-mode/local-mode.ts';
import { API_ROUTES } from '../../functions/api/routes.ts';
import type { RouteKey } from '../../shared/http/route-docs.ts';
import { REPO } from '../e2e/harness.ts';
import { rawExchange } from '../support/raw-http.ts';

/** The only routes anyone may call (DESIGN.md, docs/api.md); every other route in the table must refuse. */
const PUBLIC: readonly RouteKey[] = ['GET /healthz', 'GET /openapi.json'];
const TOKEN = 'rw_sweep_token_0123456789';

const b64 = (text: string) => Buffer.from(text).toString('base64');

/** Authorization headers that must all be refused; `undefined` sends none. */
const BAD_CREDENTIALS: readonly (readonly [string, string | undefined])[] = [
  ['no Authorization header', undefined],
  ['a wrong bearer token', 'Bearer rw_not_the_token'],
  ['the token with one character changed', `Bearer ${TOKEN.slice(0, -1)}x`],
  ['a prefix of the token', `Bearer ${TOKEN.slice(0, 8)}`],
  ['the bearer scheme alone', 'Bearer'],
  ['the bearer scheme and blanks', 'Bearer   '],
  ['the token followed by more', `Bearer ${TOKEN} extra`],
  ['the token without a scheme', TOKEN],
  ['the token under another scheme', `Token ${TOKEN}`],
  ['Basic auth with the token as password', `Basic ${b64(`local:${TOKEN}`)}`],
  ['Basic auth with the token as user', `Basic ${b64(`${TOKEN}:`)}`],
  ['a malformed header', '%%%,;;'],
];

/** Ids for `{id}`: a plain one and ones a router could choke on. */
const IDS: readonly string[] = ['x', '%ZZ', '%FF', '%C0%AF', '..', '%2F', '-bad', 'a'.repeat(300)];

/** Every concrete path of a route: its `{id}` replaced by each of IDS. */
const pathsOf = (key: RouteKey): string[] => {
  const path = key.split(' ')[1] ?? '';
  return path.includes('{') ? IDS.map((id) => path.replace(/\{\w+\}/g, id)) : [path];
};

/** A body that would be acceptable if the caller were: it must not change the answer. */
const bodyOf = (method: string) =>
  method === 'POST' || method === 'PUT'
    ? JSON.stringify({ kind: 'vm', cloud: 'local', name: 'n', targetId: 'x', asset: 'hello/site.yml' })
    : undefined;

const protectedRoutes = (Object.keys(API_ROUTES) as RouteKey[]).filter((key) => !PUBLIC.includes(key));

describe('authentication sweep over the route table', () => {
  let local: LocalMode;
  let port: number;

  const send = async (key: RouteKey, path: string, authorization: string | undefined) => {
    const method = key.split(' ')[0] ?? '';
    const body = bodyOf(method);
    const headers = [
      `${method} ${path} HTTP/1.1`,
      'host: 127.0.0.1',
      'connection: close',
      ...(authorization === undefined ? [] : [`authorization: ${authorization}`]),
      ...(body === undefined ? [] : ['content-type: application/json', `content-length: ${body.length}`]),
    ];
    const { response } = await rawExchange(port, `${headers.join('\r\n')}\r\n\r\n${body ?? ''}`);
    return response;
  };

  beforeAll(async () => {
    local = await startLocalMode({
      cwd: REPO,
      env: {
        PORT: '0',
        REMOTE_WORKER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rw-sweep-')),
        REMOTE_WORKER_TOKEN: TOKEN,
        LOG_LEVEL: 'ERROR',
        PATH: process.env.PATH,
      },
      // Nothing may run: no request in this sweep is allowed in.
      executor: {
        name: 'process',
        start: () => new Promise<never>(() => {}),
        adopt: () => new Promise<never>(() => {}),
        reapOrphans: async () => [],
      },
    });
    port = Number(new URL(local.url).port);
  });
  afterAll(() => local?.close({ drainMs: 0 }));

  it('covers every route in the table, and the public ones exist', () => {
    expect(protectedRoutes.length + PUBLIC.length).toBe(Object.keys(API_ROUTES).length);
    for (const key of PUBLIC) expect(API_ROUTES).toHaveProperty([key]);
  });

  it.each(protectedRoutes)('%s refuses every bad credential with 401, whatever the id', async (key) => {
    for (const path of pathsOf(key)) {
      for (const [what, authorization] of BAD_CREDENTIALS) {
        const res = await send(key, path, authorization);

        expect({ path, what, status: res.status }).toEqual({ path, what, status: 401 });
        expect(res.headers['content-type']).toBe('application/problem+json');
        expect(res.headers['www-authenticate']).toBe('Bearer');
        expect(res.json).toMatchObject({
          type: 'https://remote-worker.dev/problems/unauthorized',
          status: 401,
        });
        expect(res.body).not.toContain(TOKEN);
      }
    }
  });

  it.each(protectedRoutes)('%s lets the right token past authentication', async (key) => {
    // The sweep proves nothing if every answer is a 401: the token must open each route.
    const res = await send(key, pathsOf(key)[0] ?? '', `Bearer ${TOKEN}`);

    expect(res.status).not.toBe(401);
  });

  it.each(PUBLIC)('%s answers 200 with any credential or none', async (key) => {
    for (const [, authorization] of BAD_CREDENTIALS) {
      expect((await send(key, pathsOf(key)[0] ?? '', authorization)).status).toBe(200);
    }
  });

  it('changed nothing', async () => {
    const headers = { authorization: `Bearer ${TOKEN}` };
    const runs: any = await (await fetch(`${local.url}/runs`, { headers })).json();
    const targets: any = await (await fetch(`${local.url}/targets`, { headers })).json();

    expect(runs.runs).toEqual([]);
    expect(targets.targets).toEqual([]);
  });
});
