import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose';
import { loadStaticSite, pickEncoding } from '../../bin/local-mode/static-site.ts';
import type { ConsoleRuntimeConfig } from '../../infra/constructs/console-site.ts';
import { consoleCsp } from '../../infra/constructs/console-site.ts';
import {
  BROWSER_HEADERS,
  BROWSER_METHODS,
  type ControlPlaneApiProps,
} from '../../infra/constructs/control-plane-api.ts';

/**
 * The deployed shape of the console on loopback, for browser tests of OIDC
 * sign-in: a static site standing in for CloudFront (console/dist, a
 * config.json, the stack's own CSP from infra/constructs/console-site.ts) and,
 * on another origin, a gateway standing in for the HTTP API's JWT authorizer
 * and CORS in front of a real local mode.
 *
 * The gateway checks what the stack's authorizer checks — RS256 signature
 * against the issuer's keys, `iss`, `aud` among the audiences, `exp`/`nbf`,
 * and the required scopes — and answers preflights with the stack's CORS
 * settings (BROWSER_METHODS, BROWSER_HEADERS, exactly one origin). Where it
 * differs from API Gateway: it is handed the issuer's keys instead of fetching
 * jwks_uri; a refused token is a 401 `{"message":"Unauthorized"}` carrying the
 * CORS headers (as API Gateway's is, for an allowed origin); a request it lets
 * through reaches local mode with local mode's own token, so the handlers see
 * that token's identity rather than the JWT's `sub`.
 */
export interface GatewayOptions extends NonNullable<ControlPlaneApiProps['jwt']> {
  readonly jwks: JSONWebKeySet;
  /** The one browser origin allowed (the console site's). */
  readonly allowedOrigin: string;
  /** Local mode's URL and token. */
  readonly upstream: string;
  readonly upstreamToken: string;
}

export interface Loopback {
  readonly url: string;
  close(): Promise<void>;
}

export interface Gateway extends Loopback {
  /** The scopes the authorizer requires, from now on (starts as the options' scopes). */
  scopes: string[];
  /** `sub` of every request the authorizer let through, and the reason of every one it refused. */
  readonly passed: string[];
  readonly refused: string[];
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const closer = (server: Server) => () =>
  new Promise<void>((ok) => {
    server.closeAllConnections();
    server.close(() => ok());
  });

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const keys = createLocalJWKSet(options.jwks);
  const passed: string[] = [];
  const refused: string[] = [];
  const methods = new Set<string>(BROWSER_METHODS);
  const headers = new Set<string>(BROWSER_HEADERS);

  const corsHeaders = (req: IncomingMessage): Record<string, string> =>
    req.headers.origin === options.allowedOrigin
      ? { 'access-control-allow-origin': options.allowedOrigin, vary: 'origin' }
      : {};

  function preflight(req: IncomingMessage, res: ServerResponse): void {
    const method = String(req.headers['access-control-request-method'] ?? '');
    const asked = String(req.headers['access-control-request-headers'] ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter((h) => h !== '');
    const allowed =
      req.headers.origin === options.allowedOrigin &&
      methods.has(method) &&
      asked.every((h) => headers.has(h));
    res.writeHead(
      204,
      allowed
        ? {
            ...corsHeaders(req),
            'access-control-allow-methods': [...methods].join(','),
            'access-control-allow-headers': [...headers].join(','),
            'access-control-max-age': '3600',
          }
        : {},
    );
    res.end();
  }

  async function authorize(req: IncomingMessage): Promise<string> {
    const match = /^Bearer (\S+)$/.exec(String(req.headers.authorization ?? ''));
    if (match?.[1] === undefined) throw new Error('no bearer token');
    const { payload } = await jwtVerify(match[1], keys, {
      issuer: options.issuer,
      audience: [...options.audience],
      algorithms: ['RS256'],
    });
    const granted = new Set(String(payload.scope ?? payload.scp ?? '').split(' '));
    const missing = gateway.scopes.filter((s) => !granted.has(s));
    if (missing.length > 0) throw new Error(`missing scopes ${missing.join(', ')}`);
    return String(payload.sub);
  }

  const server = createServer((req, res) => {
    const handle = async () => {
      if (req.method === 'OPTIONS') return preflight(req, res);
      try {
        passed.push(await authorize(req));
      } catch (error) {
        refused.push(error instanceof Error ? error.message : String(error));
        res.writeHead(401, {
          'content-type': 'application/json',
          'www-authenticate': 'Bearer',
          ...corsHeaders(req),
        });
        res.end(JSON.stringify({ message: 'Unauthorized' }));
        return;
      }
      const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await readBody(req);
      const forwarded = new Headers();
      for (const name of ['content-type', 'idempotency-key', 'accept']) {
        const value = req.headers[name];
        if (typeof value === 'string') forwarded.set(name, value);
      }
      forwarded.set('authorization', `Bearer ${options.upstreamToken}`);
      const answer = await fetch(new URL(req.url ?? '/', options.upstream), {
        method: req.method ?? 'GET',
        headers: forwarded,
        ...(body === undefined ? {} : { body: new Uint8Array(body) }),
      });
      const out: Record<string, string> = { ...corsHeaders(req) };
      for (const name of ['content-type', 'location', 'retry-after']) {
        const value = answer.headers.get(name);
        if (value !== null) out[name] = value;
      }
      res.writeHead(answer.status, out);
      res.end(Buffer.from(await answer.arrayBuffer()));
    };
    handle().catch((error: unknown) => {
      res.writeHead(502, { 'content-type': 'application/json', ...corsHeaders(req) });
      res.end(JSON.stringify({ message: String(error) }));
    });
  });
  const gateway: Gateway = { url: '', scopes: [...options.scopes], passed, refused, close: closer(server) };
  return Object.assign(gateway, { url: await listen(server) });
}

/**
 * console/dist as CloudFront serves it: the built files, `config.json`, and
 * on every answer the stack's CSP (connect-src: the gateway and the issuer)
 * with the other security headers of the response-headers policy.
 */
export async function startConsoleSite(
  dist: string,
  config: (origin: string) => ConsoleRuntimeConfig,
): Promise<Loopback> {
  const files = loadStaticSite(dist);
  if (files === undefined) throw new Error(`${dist} has no index.html: build the console first`);
  let origin = '';
  const server = createServer((req, res) => {
    const runtime = config(origin);
    const security = {
      'content-security-policy': consoleCsp([
        new URL(runtime.apiUrl).origin,
        new URL(runtime.oidc.issuer).origin,
      ]),
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cross-origin-opener-policy': 'same-origin',
    };
    const path = new URL(req.url ?? '/', 'http://site').pathname;
    if (path === '/config.json') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache', ...security });
      res.end(JSON.stringify(runtime));
      return;
    }
    // The SPA fallback of the distribution: a path without an extension is index.html.
    const file = files.get(/\.[A-Za-z0-9]+$/.test(path) ? path : '/');
    if (file === undefined) {
      res.writeHead(403, { 'content-type': 'text/plain', ...security });
      res.end('AccessDenied');
      return;
    }
    const encoding = pickEncoding(req.headers['accept-encoding']);
    const body = encoding === 'br' ? file.br : encoding === 'gzip' ? file.gzip : file.body;
    res.writeHead(200, {
      ...file.headers,
      ...security,
      ...(encoding === undefined ? {} : { 'content-encoding': encoding }),
    });
    res.end(body);
  });
  origin = await listen(server);
  return { url: origin, close: closer(server) };
}
