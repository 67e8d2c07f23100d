import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../support/raw-http.ts';
import { type LocalProcess, newDataDir, startLocal } from './harness.ts';

const PROBLEM = 'https://remote-worker.dev/problems/';

/**
 * Requests that once stopped local mode or made it answer 500, sent byte for
 * byte over TCP to `npm start`'s process; after each one the same process
 * must still serve.
 */
describe('local mode under hostile requests', () => {
  let local: LocalProcess;
  let port: number;
  const head = (requestLine: string, headers: Record<string, string> = {}) =>
    `${requestLine}\r\nhost: 127.0.0.1\r\nconnection: close\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`;
  const bearer = () => ({ authorization: `Bearer ${local.token}` });

  const stillServes = async () => {
    expect(local.proc.exitCode).toBeNull();
    const health = await rawExchange(port, head('GET /healthz HTTP/1.1'));
    expect(health.response.status).toBe(200);
    expect(health.response.json).toEqual({ status: 'ok' });
  };

  beforeAll(async () => {
    local = await startLocal(newDataDir());
    port = Number(new URL(local.url).port);
  });
  afterAll(() => local?.stop());

  it.each([
    'GET http://[ HTTP/1.1',
    'GET http://x:99999/runs HTTP/1.1',
    'GET ///// HTTP/1.1',
    'GET //runs HTTP/1.1',
    'GET http://x///// HTTP/1.1',
    'GET * HTTP/1.1',
    'GET /runs\u0001 HTTP/1.1',
    'NOT-HTTP-AT-ALL',
  ])('answers %j with 400 problem+json and keeps serving', async (requestLine) => {
    const { response } = await rawExchange(port, head(requestLine));

    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toBe('application/problem+json');
    expect(response.json).toMatchObject({ type: `${PROBLEM}validation-failed`, status: 400 });
    await stillServes();
  });

  it.each([
    ['GET /runs/%ZZ HTTP/1.1'],
    ['PUT /targets/%FF HTTP/1.1'],
    ['GET /runs/%C0%AF HTTP/1.1'],
    ['GET /runs/%ZZ/logs HTTP/1.1'],
    ['POST /runs/%E0%80/cancel HTTP/1.1'],
    ['GET /runs?cursor=%ZZ HTTP/1.1'],
  ])('answers a bad escape in %j with 401 without a token and 400 with one', async (requestLine) => {
    const anonymous = await rawExchange(port, head(requestLine));
    const known = await rawExchange(port, head(requestLine, bearer()));

    expect(anonymous.response.status).toBe(401);
    expect(anonymous.response.json).toMatchObject({ type: `${PROBLEM}unauthorized`, status: 401 });
    expect(known.response.status).toBe(400);
    expect(known.response.headers['content-type']).toBe('application/problem+json');
    expect(known.response.json).toMatchObject({ type: `${PROBLEM}validation-failed`, status: 400 });
    await stillServes();
  });

  const upload = { 'content-type': 'application/json', 'content-length': String(8 * 1024 * 1024) };

  it('answers an anonymous multi-MB upload with 401 before the client has sent it', async () => {
    // Headers, then at most 1 MiB of the 8 MiB: a server that reads the body before authenticating never answers.
    const { response, answeredAfterBytes } = await rawExchange(port, head('POST /assets HTTP/1.1', upload), {
      bodyBytes: 1024 * 1024,
    });

    expect(response.status).toBe(401);
    expect(response.json).toMatchObject({ type: `${PROBLEM}unauthorized` });
    expect(response.headers.connection).toBe('close');
    expect(answeredAfterBytes).toBeLessThan(8 * 1024 * 1024);
    await stillServes();
  });

  it('closes the connection of a refused upload even when the client keeps it open', async () => {
    const started = Date.now();
    const { response, bodyBytesSent } = await rawExchange(
      port,
      head('POST /assets HTTP/1.1', { ...upload, connection: 'keep-alive' }).replace(
        'connection: close\r\n',
        '',
      ),
      { bodyBytes: 256 * 1024, endOnAnswer: false, timeoutMs: 4_000 },
    );

    expect(response.status).toBe(401);
    expect(bodyBytesSent).toBe(256 * 1024);
    // Closed by the server (after its short linger), long before the 8 MiB it announced could arrive.
    expect(Date.now() - started).toBeLessThan(4_000);
    await stillServes();
  });

  it('answers 401, not 413, to an anonymous body above the limit', async () => {
    const body = JSON.stringify({ kind: 'vm', asset: 'x.yml', extraVars: { blob: 'x'.repeat(300 * 1024) } });

    const res = await fetch(`${local.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });

    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ type: `${PROBLEM}unauthorized` });
  });

  it('sends no 100 Continue to an anonymous caller, and one to a known caller', async () => {
    const body = JSON.stringify({ kind: 'virtual_desktop', cloud: 'azure', name: 'Seat 9' });
    const headers = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      expect: '100-continue',
    };

    const anonymous = await rawExchange(port, head('PUT /targets/seat-9 HTTP/1.1', headers));
    const known = await rawExchange(
      port,
      `${head('PUT /targets/seat-9 HTTP/1.1', { ...headers, ...bearer() })}${body}`,
    );

    expect(anonymous.response.statusLines).toEqual(['HTTP/1.1 401 Unauthorized']);
    expect(known.response.statusLines).toEqual(['HTTP/1.1 100 Continue', 'HTTP/1.1 201 Created']);
  });

  it('answers 400 to a body nested deeper than the limit', async () => {
    let nested = '1';
    for (let i = 0; i < 5_000; i++) nested = `{"a":${nested}}`;
    const body = `{"kind":"vm","targetId":"x","asset":"hello/site.yml","extraVars":{"deep":${nested}}}`;

    const res = await fetch(`${local.url}/runs`, {
      method: 'POST',
      headers: { ...bearer(), 'content-type': 'application/json' },
      body,
    });

    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      type: `${PROBLEM}validation-failed`,
      detail: 'The body nests objects or arrays deeper than 32 levels',
    });
    await stillServes();
  });
});
