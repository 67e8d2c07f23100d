import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeGetOpenApi } from '../../../functions/api/get-openapi.ts';
import { openApiDocument } from '../../../shared/http/openapi.ts';
import { OPENAPI_JSON } from '../../../shared/http/openapi-document.ts';
import { openApiDocumentModule } from '../../../shared/http/openapi-module.ts';

const REPO = join(import.meta.dirname, '../../..');
const silent = { debug() {}, info() {}, warn() {}, error() {} };

describe('the prebuilt OpenAPI document', () => {
  it('is the module bin/generate-openapi.ts writes from the zod schemas (else: npm run generate:openapi)', () => {
    const checkedIn = readFileSync(join(REPO, 'shared/http/openapi-document.ts'), 'utf8');
    expect(
      checkedIn === openApiDocumentModule(),
      'shared/http/openapi-document.ts is stale: run `npm run generate:openapi`',
    ).toBe(true);
    expect(JSON.parse(OPENAPI_JSON)).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
  });

  it('is what GET /openapi.json answers, as JSON that can be cached', async () => {
    const handler = makeGetOpenApi({
      logger: silent,
      authenticate: () => Promise.reject(new Error('public')),
    });
    const event = {
      version: '2.0',
      routeKey: 'GET /openapi.json',
      rawPath: '/openapi.json',
      rawQueryString: '',
      headers: {},
      requestContext: { http: { method: 'GET', path: '/openapi.json' } },
      isBase64Encoded: false,
    } as any;
    const res = await handler(event, {} as any);
    expect(res.statusCode).toBe(200);
    expect(res.headers).toMatchObject({
      'content-type': 'application/json',
      'cache-control': 'public, max-age=300',
    });
    expect(JSON.parse(String(res.body))).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
  });
});

describe('GET /openapi.json', () => {
  it('refuses a body with problem+json, as every route that takes none does', async () => {
    const handler = makeGetOpenApi();
    const res = await handler(
      {
        version: '2.0',
        routeKey: 'GET /openapi.json',
        rawPath: '/openapi.json',
        rawQueryString: '',
        headers: { 'content-type': 'application/json' },
        body: '{}',
        requestContext: { http: { method: 'GET', path: '/openapi.json' } },
        isBase64Encoded: false,
      } as any,
      {} as any,
    );
    expect(res.statusCode).toBe(400);
    expect(res.headers).toMatchObject({ 'content-type': 'application/problem+json' });
    expect(JSON.parse(String(res.body))).toMatchObject({ detail: 'This route takes no request body' });
  });
});
