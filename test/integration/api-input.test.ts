import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalMode, startLocalMode } from '../../bin/local-mode/local-mode.ts';
import { type Api, client, LOCALHOST_TARGET, REPO } from '../e2e/harness.ts';

/** A stand-in executor: nothing here should ever reach it. */
const idleExecutor = {
  name: 'process' as const,
  start: () => new Promise<never>(() => {}),
  adopt: () => new Promise<never>(() => {}),
  reapOrphans: async () => [],
};

describe('API input handling', () => {
  let local: LocalMode;
  let api: Api;
  const runCount = async () => (await api('GET', '/runs?limit=100')).body.runs.length as number;
  const targetCount = async () => (await api('GET', '/targets')).body.targets.length as number;

  beforeAll(async () => {
    local = await startLocalMode({
      cwd: REPO,
      env: {
        PORT: '0',
        REMOTE_WORKER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rw-api-')),
        REMOTE_WORKER_TOKEN: 'secret-token-for-tests',
        LOG_LEVEL: 'ERROR',
        PATH: process.env.PATH,
      },
      executor: idleExecutor,
    });
    api = client(local.url, local.token);
    await api('PUT', '/targets/localhost', LOCALHOST_TARGET);
  });
  afterAll(() => local?.close({ drainMs: 0 }));

  const cases: [string, string, string, unknown, number, string][] = [
    ['malformed JSON', 'POST', '/runs', '{"kind": "vm",', 400, 'validation-failed'],
    [
      'unknown field',
      'POST',
      '/runs',
      { kind: 'vm', targetId: 'localhost', asset: 'hello/site.yml', colour: 'red' },
      400,
      'validation-failed',
    ],
    [
      'wrong type',
      'POST',
      '/runs',
      { kind: 'vm', targetId: 'localhost', asset: 42 },
      400,
      'validation-failed',
    ],
    [
      'unknown kind',
      'POST',
      '/runs',
      { kind: 'bare_metal', targetId: 'localhost', asset: 'hello/site.yml' },
      400,
      'validation-failed',
    ],
    [
      'unknown target',
      'POST',
      '/runs',
      { kind: 'vm', targetId: 'nope', asset: 'hello/site.yml' },
      400,
      'validation-failed',
    ],
    [
      'asset escaping the root',
      'POST',
      '/runs',
      { kind: 'vm', targetId: 'localhost', asset: '../../etc/passwd' },
      400,
      'asset-outside-root',
    ],
    [
      'absolute asset path',
      'POST',
      '/runs',
      { kind: 'vm', targetId: 'localhost', asset: '/etc/passwd' },
      400,
      'asset-outside-root',
    ],
    [
      'missing asset',
      'POST',
      '/runs',
      { kind: 'vm', targetId: 'localhost', asset: 'hello/none.yml' },
      422,
      'asset-not-found',
    ],
    [
      'a cluster play against a VM',
      'POST',
      '/runs',
      { kind: 'cluster_play', targetId: 'localhost', asset: 'hello/site.yml' },
      422,
      'runner-refused',
    ],
    [
      'extra var with a bad name',
      'POST',
      '/runs',
      { kind: 'vm', targetId: 'localhost', asset: 'hello/site.yml', extraVars: { 'a-b': 1 } },
      400,
      'validation-failed',
    ],
    [
      'bad target body',
      'PUT',
      '/targets/vm-2',
      { kind: 'vm', cloud: 'mars', name: 'x' },
      400,
      'validation-failed',
    ],
    ['bad target id', 'PUT', '/targets/-bad', LOCALHOST_TARGET, 400, 'validation-failed'],
    [
      'a target name that is only a space',
      'PUT',
      '/targets/vm-2',
      { ...LOCALHOST_TARGET, name: ' ' },
      400,
      'validation-failed',
    ],
    [
      'a target name with a right-to-left override',
      'PUT',
      '/targets/vm-2',
      { ...LOCALHOST_TARGET, name: 'web\u202Egnp.exe' },
      400,
      'validation-failed',
    ],
    [
      'a target name that is a byte-order mark',
      'PUT',
      '/targets/vm-2',
      { ...LOCALHOST_TARGET, name: '\uFEFF' },
      400,
      'validation-failed',
    ],
    ['bad state filter', 'GET', '/runs?state=done', undefined, 400, 'validation-failed'],
    ['bad cursor', 'GET', '/runs?cursor=%%%', undefined, 400, 'validation-failed'],
  ];

  it.each(cases)(
    'refuses %s with problem+json and writes nothing',
    async (_name, method, path, body, status, type) => {
      const [runsBefore, targetsBefore] = [await runCount(), await targetCount()];

      const res = await api(method, path, body);

      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(res.body.type).toBe(`https://remote-worker.dev/problems/${type}`);
      expect(res.body.status).toBe(status);
      expect(typeof res.body.detail).toBe('string');
      expect([await runCount(), await targetCount()]).toEqual([runsBefore, targetsBefore]);
    },
  );

  it('names each invalid field', async () => {
    const res = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'localhost',
      asset: 7,
      timeoutSeconds: -1,
    });

    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      'body.asset',
      'body.timeoutSeconds',
    ]);
  });

  it('refuses an oversize body with 413', async () => {
    const before = await runCount();
    const res = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'localhost',
      asset: 'hello/site.yml',
      extraVars: { blob: 'x'.repeat(300 * 1024) },
    });

    expect(res.status).toBe(413);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await runCount()).toBe(before);
  });

  it('refuses deeply nested extra vars with 400 and writes nothing', async () => {
    const before = await runCount();
    const deep = `${'{"a":'.repeat(10_000)}"leaf"${'}'.repeat(10_000)}`;
    const body = `{"kind":"vm","targetId":"localhost","asset":"hello/site.yml","extraVars":{"d":${deep}}}`;

    const res = await api('POST', '/runs', body);

    expect(res.status).toBe(400);
    expect(res.body.type).toBe('https://remote-worker.dev/problems/validation-failed');
    expect(await runCount()).toBe(before);
  });

  it('refuses a lone surrogate with 400, also under an Idempotency-Key', async () => {
    const body = '{"kind":"vm","targetId":"localhost","asset":"hello/site.yml","extraVars":{"a":"\\ud800"}}';

    const res = await api('POST', '/runs', body, { 'idempotency-key': 'lone-surrogate' });

    expect(res.status).toBe(400);
    expect(res.body.type).toBe('https://remote-worker.dev/problems/validation-failed');
  });

  it('answers malformed JSON without quoting it back', async () => {
    const res = await api('POST', '/runs', '{"kind":"vm","extraVars":{"password": hunter2}}');

    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).not.toContain('hunter2');
  });

  it('refuses a body that is not JSON with 415', async () => {
    const res = await fetch(`${local.url}/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${local.token}`, 'content-type': 'text/plain' },
      body: 'kind=vm',
    });
    expect(res.status).toBe(415);
  });

  it.each([
    ['GET', '/targets'],
    ['PUT', '/targets/x'],
    ['GET', '/targets/x'],
    ['DELETE', '/targets/x'],
    ['GET', '/inventory'],
    ['POST', '/runs'],
    ['GET', '/runs'],
    ['GET', '/runs/x'],
    ['GET', '/runs/x/logs'],
    ['POST', '/runs/x/cancel'],
  ])('answers 401 to %s %s without the token', async (method, path) => {
    const none = await fetch(local.url + path, { method });
    const wrong = await fetch(local.url + path, {
      method,
      headers: { authorization: 'Bearer not-the-token' },
    });

    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(wrong.status).toBe(401);
  });

  it('serves /healthz without a token', async () => {
    const res = await fetch(`${local.url}/healthz`);
    expect(res.status).toBe(200);
  });

  it('answers 404 for an unknown run and an unknown route', async () => {
    expect((await api('GET', '/runs/01ARZ3NDEKTSV4RRFFQ69G5FAV')).status).toBe(404);
    expect((await api('GET', '/nowhere')).status).toBe(404);
  });

  it('keeps targets: put, get, list, inventory, delete', async () => {
    const put = await api('PUT', '/targets/desk-1', {
      kind: 'virtual_desktop',
      cloud: 'azure',
      name: 'Seat 1',
    });
    const got = await api('GET', '/targets/desk-1');
    const inventory = await api('GET', '/inventory');
    const del = await api('DELETE', '/targets/desk-1');
    const gone = await api('GET', '/targets/desk-1');

    expect(put.status).toBe(201);
    expect(got.body.untargetable).toMatch(/virtual desktop/i);
    expect(JSON.stringify(inventory.body)).toContain('localhost');
    expect(JSON.stringify(inventory.body)).not.toContain('desk-1');
    expect(del.status).toBe(204);
    expect(gone.status).toBe(404);
  });
});
