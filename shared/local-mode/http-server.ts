import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Context } from 'aws-lambda';
import { PayloadTooLargeError } from '../domain/errors.ts';
import { type HttpEvent, type HttpHandler, MAX_BODY_BYTES } from '../http/handler.ts';
import { problemResponse } from '../http/problem.ts';

interface CompiledRoute {
  readonly method: string;
  readonly routeKey: string;
  readonly pattern: RegExp;
  readonly names: readonly string[];
  readonly handler: HttpHandler;
}

function compile(routeKey: string, handler: HttpHandler): CompiledRoute {
  const [method = '', path = ''] = routeKey.split(' ');
  const names: string[] = [];
  const source = path
    .split('/')
    .map((part) => {
      const m = /^\{(\w+)\}$/.exec(part);
      if (m?.[1] === undefined) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(m[1]);
      return '([^/]+)';
    })
    .join('/');
  return { method, routeKey, pattern: new RegExp(`^${source}$`), names, handler };
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      throw new PayloadTooLargeError(`The body is larger than the ${limit}-byte limit`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

const lambdaContext = (requestId: string): Context =>
  ({
    awsRequestId: requestId,
    functionName: 'remote-worker-local',
    functionVersion: '$LOCAL',
    invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:remote-worker-local',
    memoryLimitInMB: '1024',
    logGroupName: 'local',
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => 30_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  }) as Context;

/** The API Gateway HTTP API (payload v2) event for one Node request, as API Gateway would build it. */
function toEvent(
  req: IncomingMessage,
  url: URL,
  route: CompiledRoute,
  params: Record<string, string>,
  body: Buffer,
) {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = k in query ? `${query[k]},${v}` : v;
  const requestId = randomUUID();
  const event = {
    version: '2.0',
    routeKey: route.routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    ...(route.names.length > 0 ? { pathParameters: params } : {}),
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'localhost',
      http: {
        method: route.method,
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey: route.routeKey,
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    ...(body.length > 0 ? { body: body.toString('utf8') } : {}),
    isBase64Encoded: false,
  } satisfies HttpEvent;
  return { event, requestId };
}

function send(res: ServerResponse, result: Awaited<ReturnType<HttpHandler>>): void {
  res.writeHead(result.statusCode ?? 200, result.headers as Record<string, string>);
  res.end(result.body ?? '');
}

/**
 * Serves the Lambda handlers over plain HTTP, routing by API Gateway route
 * keys (`GET /runs/{id}`) and handing each handler the event API Gateway
 * would: local mode runs the production handler code, not a copy.
 *
 * @example
 * const server = createApiServer({ 'GET /healthz': healthz });
 * server.listen(8080, '127.0.0.1');
 */
export function createApiServer(routes: Readonly<Record<string, HttpHandler>>): Server {
  const compiled = Object.entries(routes).map(([key, handler]) => compile(key, handler));
  return createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    try {
      const candidates = compiled.filter((r) => r.pattern.test(url.pathname));
      const route = candidates.find((r) => r.method === req.method);
      if (route === undefined) {
        const status = candidates.length > 0 ? 405 : 404;
        res.writeHead(status, {
          'content-type': 'application/problem+json',
          ...(status === 405 ? { allow: candidates.map((c) => c.method).join(', ') } : {}),
        });
        res.end(
          JSON.stringify({
            type: 'about:blank',
            title: status === 404 ? 'Not Found' : 'Method Not Allowed',
            status,
            instance: url.pathname,
          }),
        );
        return;
      }
      const match = route.pattern.exec(url.pathname);
      const params = Object.fromEntries(
        route.names.map((name, i) => [name, decodeURIComponent(match?.[i + 1] ?? '')]),
      );
      const body = await readBody(req, route.handler.maxBodyBytes ?? MAX_BODY_BYTES);
      const { event, requestId } = toEvent(req, url, route, params, body);
      send(res, await route.handler(event, lambdaContext(requestId)));
    } catch (error) {
      if (error instanceof PayloadTooLargeError) req.resume();
      send(res, problemResponse(error, url.pathname));
    }
  });
}
