import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Logger } from '@aws-lambda-powertools/logger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { bearerAuthenticator } from '../../bin/local-mode/auth-token.ts';
import { createApiServer } from '../../bin/local-mode/http-server.ts';
import { type HttpHandler, httpHandler, json } from '../../shared/http/handler.ts';

const TOKEN = 'rw_server_test_token';

/** Handlers that fail in every way a handler can; none of them may take the server down. */
const throwsAsync: HttpHandler = async () => {
  throw new TypeError("Cannot read properties of undefined (reading 'id')");
};
const throwsSync = (() => {
  throw new RangeError('Maximum call stack size exceeded');
}) as unknown as HttpHandler;
const rejectsWithNonError: HttpHandler = () => Promise.reject('a bare string');
const answersUnwritableHeader: HttpHandler = async () => ({
  statusCode: 200,
  headers: { 'x-bad': 'line\nbreak' },
  body: '{}',
});

describe('createApiServer', () => {
  let server: Server;
  let base: string;
  const logged: string[] = [];

  beforeAll(async () => {
    const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
    const deps = { authenticate: bearerAuthenticator(TOKEN), logger };
    server = createApiServer(
      {
        'GET /healthz': httpHandler(deps, { public: true, handle: async () => json(200, { status: 'ok' }) }),
        'GET /things/{id}': httpHandler(deps, {
          params: z.object({ id: z.string() }),
          handle: async ({ params }) => json(200, { id: params.id }),
        }),
        'POST /things': httpHandler(deps, {
          body: z.unknown(),
          handle: async ({ body }) => json(200, { got: body }),
        }),
        'GET /middy-throws': httpHandler(deps, {
          handle: async () => {
            throw new Error('the database said no');
          },
        }),
        'GET /throws-async': throwsAsync,
        'GET /throws-sync': throwsSync,
        'GET /rejects-non-error': rejectsWithNonError,
        'GET /unwritable-header': answersUnwritableHeader,
      },
      {
        authenticate: bearerAuthenticator(TOKEN),
        logger: { error: (message: string) => void logged.push(message) },
      },
    );
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(
    () =>
      new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      }),
  );

  /** `null`: send no Authorization header. */
  const get = (path: string, token: string | null = TOKEN) =>
    fetch(base + path, token === null ? {} : { headers: { authorization: `Bearer ${token}` } });

  it.each(['/middy-throws', '/throws-async', '/throws-sync', '/rejects-non-error', '/unwritable-header'])(
    'answers what %s throws with a bare 500 problem+json, then serves the next request',
    async (path) => {
      const failed = await get(path);
      const next = await get('/things/abc');

      expect(failed.status).toBe(500);
      expect(failed.headers.get('content-type')).toBe('application/problem+json');
      const problem = await failed.json();
      expect(problem).toEqual({
        type: 'about:blank',
        title: 'Internal Server Error',
        status: 500,
        instance: path,
      });
      expect(next.status).toBe(200);
      expect(await next.json()).toEqual({ id: 'abc' });
    },
  );

  it('tells the log, not the client, what went wrong', async () => {
    logged.length = 0;

    const failed = await get('/throws-async');

    expect(await failed.text()).not.toContain('Cannot read properties');
    expect(logged).toEqual(['request failed']);
  });

  it('authenticates before it looks the route up', async () => {
    expect((await get('/nowhere', null)).status).toBe(401);
    expect((await get('/nowhere')).status).toBe(404);
    expect((await fetch(`${base}/things/x`, { method: 'DELETE' })).status).toBe(401);
    const wrongMethod = await fetch(`${base}/things/x`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET');
  });

  it('serves a public route without a token', async () => {
    const res = await get('/healthz', null);

    expect(res.status).toBe(200);
  });

  it('hands the handler decoded path and query parameters', async () => {
    const res = await get('/things/a%2Fb%20c?x=1');

    expect(await res.json()).toEqual({ id: 'a/b c' });
  });

  it('refuses a declared body above the limit with 413 before reading it', async () => {
    const res = await fetch(`${base}/things`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ blob: 'x'.repeat(300 * 1024) }),
    });

    expect(res.status).toBe(413);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.headers.get('connection')).toBe('close');
  });

  it('refuses a chunked body that grows past the limit with 413', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        // Far more than the limit: the server must answer before the stream ends.
        if (sent++ < 200) controller.enqueue(chunk);
        else controller.close();
      },
    });

    const res = await fetch(`${base}/things`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);

    expect(res.status).toBe(413);
    expect(sent).toBeLessThan(200);
  });
});
