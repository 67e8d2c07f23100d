import { randomUUID } from 'node:crypto';
import {
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Context } from 'aws-lambda';
import { DomainError, PayloadTooLargeError, ValidationError } from '../../shared/domain/errors.ts';
import type { Authenticator, HttpEvent, HttpHandler, HttpResult } from '../../shared/http/handler.ts';
import { MAX_BODY_BYTES } from '../../shared/http/json-body.ts';
import { problemResponse } from '../../shared/http/problem.ts';
import type { Logger } from '../../shared/ports/logger.ts';
import {
  type CompiledRoute,
  compileRoutes,
  decodeParams,
  decodeQuery,
  matchRoute,
  parseRequestTarget,
  type RequestTarget,
} from './router.ts';
import { pickEncoding, type StaticFile } from './static-site.ts';

/**
 * The body, up to `limit` bytes. Past the limit it stops collecting and
 * refuses at once (413) rather than reading the rest to the end.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        reject(new PayloadTooLargeError(`The body is larger than the ${limit}-byte limit`));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
    // A client that goes away mid-body: settle, so nothing waits on it (a no-op after 'end').
    req.once('close', () => reject(new Error('the client closed the connection before the body ended')));
  });
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

/** The API Gateway HTTP API (payload v2) event for one Node request, as API Gateway would build it: nothing decoded and no body yet. */
function toEvent(req: IncomingMessage, target: RequestTarget, routeKey: string): HttpEvent {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  return {
    version: '2.0',
    routeKey,
    rawPath: target.path,
    rawQueryString: target.rawQuery,
    headers,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'localhost',
      http: {
        method: req.method ?? '',
        path: target.path,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    isBase64Encoded: false,
  };
}

const hasBody = (req: IncomingMessage): boolean =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

function routeProblem(status: 404 | 405, instance: string, allow: readonly string[] = []): HttpResult {
  return {
    statusCode: status,
    headers: {
      'content-type': 'application/problem+json',
      'cache-control': 'no-store',
      ...(status === 405 ? { allow: allow.join(', ') } : {}),
    },
    body: JSON.stringify({ type: 'about:blank', title: STATUS_CODES[status], status, instance }),
  };
}

/** How long a connection refused mid-upload stays half-open before it is closed. */
const LINGER_MS = 1_000;

/**
 * Close, soon, a connection whose request body was refused unread. Node
 * closes a `connection: close` socket as soon as the answer is written, and
 * closing with unread bytes makes the kernel reset the connection, which can
 * discard the answer before a client still uploading has read it. So, as
 * web servers do (a "lingering close"): send FIN, let what still arrives be
 * discarded, and close when the client closes or after LINGER_MS.
 */
function lingerThenClose(socket: Socket): void {
  socket.destroySoon = () => {
    socket.end();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once('end', () => socket.destroy());
    socket.once('close', () => clearTimeout(timer));
  };
}

/**
 * Write the answer. A body the request still has unread is never read to its
 * end: `connection: close` ends the connection after the answer, so a caller
 * refused before its upload cannot make the server take the rest.
 */
function send(req: IncomingMessage, res: ServerResponse, result: HttpResult): void {
  const headers = closeIfBodyUnread(req, { ...(result.headers as Record<string, string>) });
  res.writeHead(result.statusCode ?? 200, headers);
  res.end(result.body ?? '');
}

function closeIfBodyUnread(req: IncomingMessage, headers: Record<string, string>): Record<string, string> {
  if (!req.complete && hasBody(req)) {
    headers.connection = 'close';
    lingerThenClose(req.socket);
    // Bytes already on their way are discarded, not buffered, while the connection lingers.
    req.resume();
  }
  return headers;
}

/** A file of the console: public, compressed when the client accepts it, 304 when it already has it. */
function sendStatic(req: IncomingMessage, res: ServerResponse, file: StaticFile): void {
  const headers = closeIfBodyUnread(req, { ...file.headers, etag: file.etag });
  if (req.headers['if-none-match']?.split(',').some((tag) => tag.trim() === file.etag)) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  const encoding = pickEncoding(req.headers['accept-encoding']);
  const body = encoding === 'br' ? file.br : encoding === 'gzip' ? file.gzip : file.body;
  if (encoding !== undefined) headers['content-encoding'] = encoding;
  headers['content-length'] = String(body.length);
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** A request Node's HTTP parser refused (bad request line, header overflow) still gets problem+json. */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status =
    error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const problem =
    status === 400
      ? problemResponse(new ValidationError('The request is not valid HTTP/1.1')).body
      : JSON.stringify({ type: 'about:blank', title: STATUS_CODES[status], status });
  const body = problem ?? '';
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/problem+json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export interface ApiServerOptions {
  /**
   * Checks the caller from the headers before anything else: every request
   * but those for a public route is refused with 401 before its target's
   * escapes are decoded, its route is looked up or its body is read.
   */
  readonly authenticate?: Authenticator;
  /** Where failures the client only sees as a bare 500 are told in full. */
  readonly logger?: Pick<Logger, 'error'>;
  /**
   * The web console's files by exact URL path (static-site.ts), served to GET
   * and HEAD without authentication: they hold no data, and the sign-in page
   * must load before the caller has a token. Every other path is the API's.
   */
  readonly site?: ReadonlyMap<string, StaticFile>;
}

/**
 * Serves the Lambda handlers over plain HTTP, routing by API Gateway route
 * keys (`GET /runs/{id}`) and handing each handler the event API Gateway
 * would: local mode runs the production handler code, not a copy.
 *
 * Nothing a request carries can stop the server: a target that does not
 * parse is a 400, and whatever a handler throws is a 500 problem+json for
 * that request only.
 *
 * @example
 * const server = createApiServer({ 'GET /healthz': healthz }, { authenticate: bearerAuthenticator(token) });
 * server.listen(8080, '127.0.0.1');
 */
export function createApiServer(
  routes: Readonly<Record<string, HttpHandler>>,
  options: ApiServerOptions = {},
): Server {
  const compiled: readonly CompiledRoute<HttpHandler>[] = compileRoutes(routes);

  async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    target: RequestTarget,
    expectsContinue: boolean,
  ): Promise<HttpResult> {
    const match = matchRoute(compiled, req.method ?? '', target.path);
    const route = match.kind === 'route' ? match.route : undefined;
    const bare = toEvent(req, target, route?.routeKey ?? '$default');
    if (route?.handler.public !== true) await options.authenticate?.(bare);
    if (match.kind === 'not_found') return routeProblem(404, target.path);
    if (match.kind === 'method_not_allowed') return routeProblem(405, target.path, match.allow);
    const params = decodeParams(match);
    const query = decodeQuery(target.rawQuery);
    const event: HttpEvent = {
      ...bare,
      ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
      ...(Object.keys(params).length > 0 ? { pathParameters: params } : {}),
    };
    const { handler } = match.route;
    const limit = handler.maxBodyBytes ?? MAX_BODY_BYTES;
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      throw new PayloadTooLargeError(`The body is ${declared} bytes; the limit is ${limit}`);
    }
    // Only now, with the caller known and the size acceptable, invite the body.
    if (expectsContinue) res.writeContinue();
    const body = await readBody(req, limit);
    return handler(
      body.length > 0 ? { ...event, body: body.toString('utf8') } : event,
      lambdaContext(event.requestContext.requestId),
    );
  }

  async function serve(req: IncomingMessage, res: ServerResponse, expectsContinue: boolean) {
    let instance: string | undefined;
    let result: HttpResult;
    try {
      const target = parseRequestTarget(req.url ?? '');
      instance = target.path;
      const file = req.method === 'GET' || req.method === 'HEAD' ? options.site?.get(target.path) : undefined;
      if (file !== undefined) return sendStatic(req, res, file);
      result = await handle(req, res, target, expectsContinue);
    } catch (error) {
      if (!(error instanceof DomainError)) {
        options.logger?.error('request failed', {
          method: req.method,
          path: instance,
          error: error as Error,
        });
      }
      result = problemResponse(error, instance);
    }
    try {
      send(req, res, result);
    } catch (error) {
      // A result Node cannot write (a bad header from a handler): a bare 500 if nothing went out yet.
      options.logger?.error('could not write the answer', { path: instance, error: error as Error });
      if (res.headersSent) res.destroy();
      else send(req, res, problemResponse(error, instance));
    }
  }

  // The last guard: a failure while answering a failure ends that one connection, never the process.
  const serveOrDrop = (req: IncomingMessage, res: ServerResponse, expectsContinue: boolean) => {
    serve(req, res, expectsContinue).catch(() => res.destroy());
  };
  const server = createServer((req, res) => serveOrDrop(req, res, false));
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => serveOrDrop(req, res, true));
  server.on('clientError', answerClientError);
  return server;
}

/**
 * Stop the API server: no new connections, and every open one closed at once
 * (a keep-alive client would otherwise hold the close until it timed out);
 * resolves when the server has closed. Both modes stop their server so.
 *
 * @example
 * await closeApiServer(server);
 */
export function closeApiServer(server: Server): Promise<void> {
  return new Promise<void>((ok) => {
    server.close(() => ok());
    server.closeAllConnections();
  });
}
