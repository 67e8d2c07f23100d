import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { type LocalMode, startLocalMode } from '../../bin/local-mode/local-mode.ts';
import { API_ROUTES } from '../../functions/api/routes.ts';
import { openApiDocument, RESPONSES } from '../../shared/http/openapi.ts';
import { PROBLEM_KINDS, problemType } from '../../shared/http/problem.ts';
import { RunSchema } from '../../shared/http/response-schemas.ts';
import type { Executor } from '../../shared/ports/executor.ts';
import { LOG_PAGE_DEFAULT_LINES, LOG_PAGE_MAX_LINES } from '../../shared/ports/log-store.ts';
import { client, LOCALHOST_TARGET, REPO, waitForState } from '../e2e/harness.ts';

const doc = openApiDocument() as any;
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const operations = (): [string, string, any][] =>
  Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, op]) => [path, method, op] as [string, string, any]),
  );

/** Every `$ref` anywhere under `value`. */
const refsIn = (value: unknown): string[] =>
  Array.isArray(value)
    ? value.flatMap(refsIn)
    : typeof value === 'object' && value !== null
      ? Object.entries(value).flatMap(([k, v]) => (k === '$ref' && typeof v === 'string' ? [v] : refsIn(v)))
      : [];

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 with bearer security by default', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(doc.components.securitySchemes.bearer).toEqual(
      expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    );
    expect(doc.security).toEqual([{ bearer: [] }]);
  });

  it('documents every route of the route table, and nothing else', () => {
    const documented = operations().map(([path, method]) => `${method.toUpperCase()} ${path}`);

    expect(documented.sort()).toEqual(Object.keys(API_ROUTES).sort());
  });

  it('declares every path parameter of every route', () => {
    for (const [path, method, op] of operations()) {
      const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const declared = (op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => p.name);
      expect(declared, `${method} ${path}`).toEqual(inPath);
    }
  });

  it('gives every response a schema (204 aside) and every error the problem shape', () => {
    for (const [path, method, op] of operations()) {
      const where = `${method} ${path}`;
      expect(Object.keys(op.responses).length, where).toBeGreaterThan(0);
      for (const [status, response] of Object.entries<any>(op.responses)) {
        if (status === '204') {
          expect(response.content, where).toBeUndefined();
          continue;
        }
        const [type, media] = Object.entries<any>(response.content ?? {})[0] ?? [];
        expect(media?.schema, `${where} ${status}`).toBeDefined();
        if (Number(status) >= 400) {
          expect(type, `${where} ${status}`).toBe('application/problem+json');
          expect(refsIn(media.schema), `${where} ${status}`).toContain('#/components/schemas/Problem');
        } else {
          expect(type, `${where} ${status}`).toBe('application/json');
        }
      }
    }
  });

  it('lists the stable problem types with their status', () => {
    const types = doc['x-problem-types'].map((p: any) => p.type);

    expect(types).toEqual(
      Object.keys(PROBLEM_KINDS).map((code) => problemType(code as keyof typeof PROBLEM_KINDS)),
    );
    expect(types).toContain('https://remote-worker.dev/problems/selection-refused');
    for (const [, , op] of operations()) expect(op.responses['500']).toBeDefined();
  });

  it('marks only /healthz and /openapi.json public, and asks for a token everywhere else', () => {
    for (const [path, method, op] of operations()) {
      const isPublic = path === '/healthz' || path === '/openapi.json';
      expect(op.security, `${method} ${path}`).toEqual(isPublic ? [] : undefined);
      expect(op.responses['401'] === undefined, `${method} ${path}`).toBe(isPublic);
    }
  });

  it('resolves every $ref to a component', () => {
    const names = new Set(Object.keys(doc.components.schemas).map((n) => `#/components/schemas/${n}`));

    for (const ref of refsIn(doc)) expect(names, ref).toContain(ref);
  });

  it('documents request bodies from the same zod schemas the handlers use', () => {
    expect(doc.paths['/batches'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/SubmitBatchRequest',
    });
    const batch = doc.components.schemas.SubmitBatchRequest;
    expect(batch.required).toEqual(expect.arrayContaining(['kind', 'targetIds', 'asset']));
    expect(batch.properties.targetIds).toMatchObject({ minItems: 1, maxItems: 50 });
    expect(batch.additionalProperties).toBe(false);
    expect(doc.paths['/runs'].get.parameters.map((p: any) => [p.name, p.in])).toEqual([
      ['batchId', 'query'],
      ['state', 'query'],
      ['limit', 'query'],
      ['cursor', 'query'],
    ]);
  });

  // openapi-spec-validator is a test prerequisite (bin/prerequisites/sets.ts): npm test installs it or stops.
  it('passes openapi-spec-validator', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rw-openapi-')), 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));

    const out = execFileSync('python3', ['-m', 'openapi_spec_validator', file], { encoding: 'utf8' });

    expect(out).toContain('OK');
  });

  it('names the server: the API that serves it, resolved against where the document was fetched', () => {
    expect(doc.servers).toEqual([{ url: '/', description: expect.any(String) }]);
  });

  it('documents the logs page limit with the cap every backend honours', () => {
    const limit = doc.paths['/runs/{id}/logs'].get.parameters.find((p: any) => p.name === 'limit');

    expect(limit.schema).toMatchObject({
      minimum: 1,
      maximum: LOG_PAGE_MAX_LINES,
      default: LOG_PAGE_DEFAULT_LINES,
    });
    expect(limit.description).toContain(String(LOG_PAGE_MAX_LINES));
  });

  // @redocly/cli 2.77.0 (../shared/NOTES.md) as a devDependency: `--no-install` so a missing one fails here
  // instead of being fetched, and telemetry off so the test makes no network call.
  it('passes redocly lint (recommended rules) with no error', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rw-openapi-')), 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));

    const lint = spawnSync('npx', ['--no-install', 'redocly', 'lint', '--format=stylish', file], {
      cwd: REPO,
      encoding: 'utf8',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      timeout: 60_000,
    });

    expect(lint.status, `${lint.stdout}\n${lint.stderr}`).toBe(0);
  });
});

/** Runs end at once with exit code 0 and one line of output. */
const quickExecutor: Executor = {
  name: 'process',
  async start(request, sink) {
    sink([{ stream: 'stdout', text: 'ok' }]);
    return { handle: `fake:${request.runId}`, done: Promise.resolve({ exitCode: 0 }), kill: async () => {} };
  },
  adopt: async (handle) => ({ handle, done: Promise.resolve({ lost: 'fake' }), kill: async () => {} }),
  reapOrphans: async () => [],
};

describe('the live API against its document', () => {
  let local: LocalMode;

  beforeAll(async () => {
    const sandbox = mkdtempSync(join(tmpdir(), 'rw-openapi-live-'));
    local = await startLocalMode({
      cwd: REPO,
      env: {
        PORT: '0',
        REMOTE_WORKER_DATA_DIR: join(sandbox, 'data'),
        REMOTE_WORKER_TOKEN: 'secret-token-for-tests',
        LOCAL_STORAGE_PATH: join(sandbox, 'assets'),
        LOG_LEVEL: 'ERROR',
        PATH: process.env.PATH,
      },
      executor: quickExecutor,
    });
  });
  afterAll(() => local?.close({ drainMs: 0 }));

  it('serves the document at /openapi.json without a token', async () => {
    const res = await fetch(`${local.url}/openapi.json`);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(JSON.parse(JSON.stringify(doc)));
  });

  it('answers every route with a documented status and a body its schema accepts', async () => {
    const api = client(local.url, local.token);
    const exchanges: { route: string; status: number; type: string | null; body: any }[] = [];
    const call = async (route: string, path: string, body?: unknown) => {
      const [method = ''] = route.split(' ');
      const res = await api(method, path, body);
      exchanges.push({ route, status: res.status, type: res.headers.get('content-type'), body: res.body });
      return res;
    };

    await call('POST /assets', '/assets', {
      path: 'hello/site.yml',
      contentBase64: Buffer.from('- hosts: all\n').toString('base64'),
    });
    await call('POST /assets', '/assets', { path: 'hello/site.yml', contentBase64: 'eA==' });
    await call('GET /assets', '/assets');
    await call('PUT /targets/{id}', '/targets/localhost', LOCALHOST_TARGET);
    await call('PUT /targets/{id}', '/targets/localhost', LOCALHOST_TARGET);
    await call('PUT /targets/{id}', '/targets/desk', { kind: 'virtual_desktop', cloud: 'azure', name: 'd' });
    await call('GET /targets', '/targets');
    await call('GET /targets/{id}', '/targets/desk');
    await call('GET /targets/{id}', '/targets/nope');
    await call('GET /inventory', '/inventory');
    await call('POST /discovery/refresh', '/discovery/refresh');
    await call('GET /discovery', '/discovery');
    const run = await call('POST /runs', '/runs', {
      kind: 'vm',
      targetId: 'localhost',
      asset: 'hello/site.yml',
    });
    await call('POST /runs', '/runs', { kind: 'vm', targetId: 'localhost', asset: 7 });
    await waitForState(api, run.body.id, 'terminal');
    await call('GET /runs/{id}', `/runs/${run.body.id}`);
    await call('GET /runs', '/runs?limit=1');
    await call('GET /runs/{id}/logs', `/runs/${run.body.id}/logs`);
    await call('POST /runs/{id}/cancel', `/runs/${run.body.id}/cancel`);
    const batch = await call('POST /batches', '/batches', {
      kind: 'vm',
      targetIds: ['localhost'],
      asset: 'hello/site.yml',
    });
    await call('POST /batches', '/batches', {
      kind: 'vm',
      targetIds: ['localhost', 'desk'],
      asset: 'hello/site.yml',
    });
    await waitForState(api, batch.body.runs[0].id, 'terminal');
    await call('GET /batches/{id}', `/batches/${batch.body.batchId}`);
    await call('POST /batches/{id}/retry', `/batches/${batch.body.batchId}/retry`);
    await call('DELETE /targets/{id}', '/targets/desk');
    await call('GET /healthz', '/healthz');
    await call('GET /openapi.json', '/openapi.json');

    expect(new Set(exchanges.map((e) => e.route))).toEqual(new Set(Object.keys(API_ROUTES)));
    for (const { route, status, type, body } of exchanges) {
      const [method = '', path = ''] = route.split(' ');
      const response = doc.paths[path][method.toLowerCase()].responses[String(status)];
      expect(response, `${route} answered ${status}, which is not documented`).toBeDefined();
      if (status === 204) continue;
      const [media, content] = Object.entries<any>(response.content)[0] ?? [];
      expect(type, route).toBe(media);
      if (status >= 400) {
        const parsed = RESPONSES.Problem.safeParse(body);
        expect(parsed.success, `${route} ${status}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
        expect(content.schema.allOf[1].properties.type.enum, route).toContain(body.type);
      } else {
        const name = content.schema.$ref.split('/').pop() as keyof typeof RESPONSES;
        const parsed = RESPONSES[name].safeParse(body);
        expect(parsed.success, `${route} ${status}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
      }
    }
  });

  it('documents every field of a live run (a new field must be added to the response schema)', async () => {
    const api = client(local.url, local.token);
    const { body: page } = await api('GET', '/runs?limit=100');

    for (const run of page.runs) {
      const strict = z.strictObject(RunSchema.shape).safeParse(run);
      expect(strict.success, JSON.stringify(strict.error?.issues)).toBe(true);
    }
    expect(page.runs.length).toBeGreaterThan(0);
  });
});
