import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JSONWebKeySet, type JWK, SignJWT } from 'jose';
import { testTls } from './tls.ts';

/**
 * A loopback OpenID Connect provider for the console's sign-in tests, over
 * https (test/support/tls.ts): discovery, an authorization endpoint that
 * approves at once (no login form) and redirects back with a code, a token
 * endpoint for public clients that checks the PKCE verifier against the S256
 * challenge, and RS256-signed tokens from a key made at start (JWKS served).
 *
 * Where it differs from a real provider: no user, consent or session; one
 * registered client; the browser must be told to accept its certificate
 * (playwright's ignoreHTTPSErrors). `tamperChallenge` swaps the challenge it
 * stores for one of another verifier, so the exchange must fail: the test of
 * the verifier check itself.
 *
 * @example
 * const idp = await startFakeOidc({ clientId: 'console', redirectUri: 'http://127.0.0.1:9000/', audience: 'api://rw', allowedOrigin: 'http://127.0.0.1:9000' });
 * idp.issuer; // https://127.0.0.1:<port>/oauth2/default
 */
export interface FakeOidcOptions {
  readonly clientId: string;
  readonly redirectUri: string;
  /** `aud` of the access tokens (the API's JWT authorizer audience). */
  readonly audience: string;
  /** The console's origin: discovery and the token endpoint answer it with CORS, as a provider does for SPAs. */
  readonly allowedOrigin: string;
}

export interface AuthorizeRequest {
  readonly params: Readonly<Record<string, string>>;
}

export interface TokenRequest {
  readonly params: Readonly<Record<string, string>>;
  readonly authorization: string | undefined;
  readonly status: number;
}

export interface FakeOidc {
  readonly issuer: string;
  readonly origin: string;
  /** The public keys, as the JWKS endpoint serves them. */
  readonly jwks: JSONWebKeySet;
  readonly authorizeRequests: AuthorizeRequest[];
  readonly tokenRequests: TokenRequest[];
  /** Lifetime of the tokens issued from now on (default an hour). */
  tokenLifetimeSeconds: number;
  /** `aud` of the access tokens issued from now on. */
  audience: string;
  /** Store a challenge that does not belong to the client's verifier: the next exchange must be refused. */
  tamperChallenge: boolean;
  /** Answer the authorization request with `access_denied` (the user declined, or may not use the client). */
  deny: boolean;
  close(): Promise<void>;
}

const SUBJECT = 'operator@example.com';

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startFakeOidc(options: FakeOidcOptions): Promise<FakeOidc> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const kid = randomBytes(8).toString('hex');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  const codes = new Map<string, { challenge: string; nonce: string; redirectUri: string; scope: string }>();
  let origin = '';
  const state = {
    issuer: '',
    origin: '',
    jwks: { keys: [jwk] },
    authorizeRequests: [] as AuthorizeRequest[],
    tokenRequests: [] as TokenRequest[],
    tokenLifetimeSeconds: 3600,
    audience: options.audience,
    tamperChallenge: false,
    deny: false,
  };

  const cors = (res: ServerResponse, req: IncomingMessage) => {
    if (req.headers.origin === options.allowedOrigin) {
      res.setHeader('access-control-allow-origin', options.allowedOrigin);
      res.setHeader('vary', 'origin');
    }
  };
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };
  const sign = (claims: Record<string, unknown>, audience: string) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
      .setIssuer(state.issuer)
      .setSubject(SUBJECT)
      .setAudience(audience)
      .setIssuedAt()
      .setExpirationTime(`${state.tokenLifetimeSeconds}s`)
      .sign(privateKey);

  async function authorize(url: URL, res: ServerResponse): Promise<void> {
    const params = Object.fromEntries(url.searchParams);
    state.authorizeRequests.push({ params });
    // Errors about the client or redirect URI are shown, never redirected (RFC 6749 §4.1.2.1).
    if (params.client_id !== options.clientId || params.redirect_uri !== options.redirectUri) {
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end('unknown client or redirect_uri');
      return;
    }
    const back = new URL(options.redirectUri);
    if (params.state !== undefined) back.searchParams.set('state', params.state);
    const refuse = (error: string, description: string) => {
      back.searchParams.set('error', error);
      back.searchParams.set('error_description', description);
      res.writeHead(302, { location: back.toString() });
      res.end();
    };
    if (state.deny) return refuse('access_denied', 'operator@example.com may not use this client');
    if (params.response_type !== 'code') return refuse('unsupported_response_type', 'only code');
    if (params.code_challenge_method !== 'S256' || !params.code_challenge) {
      return refuse('invalid_request', 'PKCE with S256 is required');
    }
    if (!params.scope?.split(' ').includes('openid')) return refuse('invalid_scope', 'openid is required');
    if (!params.state || !params.nonce) return refuse('invalid_request', 'state and nonce are required');
    const code = randomBytes(16).toString('base64url');
    codes.set(code, {
      challenge: state.tamperChallenge ? s256(randomBytes(32).toString('base64url')) : params.code_challenge,
      nonce: params.nonce,
      redirectUri: params.redirect_uri,
      scope: params.scope,
    });
    back.searchParams.set('code', code);
    back.searchParams.set('iss', state.issuer);
    res.writeHead(302, { location: back.toString() });
    res.end();
  }

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const params = Object.fromEntries(new URLSearchParams(await readBody(req)));
    const answer = (status: number, body: unknown) => {
      state.tokenRequests.push({ params, authorization: req.headers.authorization, status });
      json(res, status, body);
    };
    const grant = codes.get(params.code ?? '');
    if (params.code !== undefined) codes.delete(params.code);
    if (params.grant_type !== 'authorization_code') {
      return answer(400, { error: 'unsupported_grant_type' });
    }
    if (params.client_id !== options.clientId || params.client_secret !== undefined) {
      return answer(401, { error: 'invalid_client', error_description: 'a public client sends no secret' });
    }
    if (grant === undefined || grant.redirectUri !== params.redirect_uri) {
      return answer(400, { error: 'invalid_grant', error_description: 'unknown or used code' });
    }
    if (params.code_verifier === undefined || s256(params.code_verifier) !== grant.challenge) {
      return answer(400, {
        error: 'invalid_grant',
        error_description: 'PKCE verification failed: code_verifier does not match code_challenge',
      });
    }
    const scope = grant.scope;
    answer(200, {
      token_type: 'Bearer',
      expires_in: state.tokenLifetimeSeconds,
      scope,
      access_token: await sign({ scope, client_id: options.clientId }, state.audience),
      id_token: await sign({ nonce: grant.nonce, email: SUBJECT }, options.clientId),
    });
  }

  const server: Server = createServer({ key: testTls().key, cert: testTls().cert }, (req, res) => {
    const url = new URL(req.url ?? '/', origin);
    cors(res, req);
    const route = `${req.method} ${url.pathname}`;
    const handle = async () => {
      if (req.method === 'OPTIONS') {
        res.setHeader('access-control-allow-methods', 'GET, POST');
        res.setHeader('access-control-allow-headers', 'content-type, accept');
        res.writeHead(204);
        res.end();
      } else if (route === 'GET /oauth2/default/.well-known/openid-configuration') {
        json(res, 200, {
          issuer: state.issuer,
          authorization_endpoint: `${state.issuer}/v1/authorize`,
          token_endpoint: `${state.issuer}/v1/token`,
          jwks_uri: `${state.issuer}/v1/keys`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['none'],
          scopes_supported: ['openid', 'email', 'remote-worker/runs'],
        });
      } else if (route === 'GET /oauth2/default/v1/keys') {
        json(res, 200, state.jwks);
      } else if (route === 'GET /oauth2/default/v1/authorize') {
        await authorize(url, res);
      } else if (route === 'POST /oauth2/default/v1/token') {
        await token(req, res);
      } else {
        json(res, 404, { error: 'not_found' });
      }
    };
    handle().catch((error: unknown) => json(res, 500, { error: 'server_error', detail: String(error) }));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.origin = origin;
  state.issuer = `${origin}/oauth2/default`;
  return Object.assign(state, {
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  });
}
