import * as oauth from 'oauth4webapi';
import type { OidcConfig } from './config.ts';

/**
 * OpenID Connect sign-in for a deployed console: authorization code with
 * PKCE (S256), `state` and `nonce`, as a public client (no secret), through
 * oauth4webapi (discovery, the callback's checks, the code exchange and the
 * ID token's claims: issuer, audience, expiry, nonce). The token the API's
 * JWT authorizer checks (config `bearer`) is what the console sends.
 *
 * The verifier, state and nonce wait in sessionStorage between the redirect
 * out and the redirect back (the same tab), and are removed when used.
 */
const PENDING_KEY = 'remote-worker.oidc-pending';

interface Pending {
  readonly verifier: string;
  readonly state: string;
  readonly nonce: string;
  /** The hash route to return to after sign-in. */
  readonly returnTo: string;
}

export interface SignedIn {
  readonly token: string;
  /**
   * Milliseconds since the epoch: the soonest of `expires_in` (counted from
   * when the response arrived), the ID token's `exp` and the bearer's own
   * `exp` when it is a JWT, less EXPIRY_MARGIN_MS.
   */
  readonly expiresAt: number | undefined;
}

/**
 * How long before the token's end the tab signs out. The API checks the
 * bearer's own `exp`, which the issuer stamped before its response left
 * (`expires_in` counts from the arrival, so later); a request sent in the
 * last moment could also reach the API after it. Without the margin such a
 * request is refused and the tab says "refused" instead of "expired".
 */
const EXPIRY_MARGIN_MS = 1000;

/**
 * The `exp` of a JWT bearer, in milliseconds, read without verifying: only
 * to sign out in time, never to trust the token (the API verifies it).
 * Undefined for an opaque token.
 */
function jwtExpiry(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/'));
    const exp = (JSON.parse(json) as { exp?: unknown }).exp;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** The console's own URL without query or hash: what the IdP redirects back to (the stack's ConsoleUrl). */
export const redirectUri = (): string => `${window.location.origin}${window.location.pathname}`;

async function discover(config: OidcConfig): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(config.issuer);
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc' }));
}

/** Off to the issuer's authorization endpoint; the page unloads. */
export async function startSignIn(config: OidcConfig): Promise<void> {
  const as = await discover(config);
  if (as.authorization_endpoint === undefined) throw new Error('The issuer names no authorization endpoint');
  const pending: Pending = {
    verifier: oauth.generateRandomCodeVerifier(),
    state: oauth.generateRandomState(),
    nonce: oauth.generateRandomNonce(),
    returnTo: window.location.hash,
  };
  const url = new URL(as.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: config.clientId,
    redirect_uri: redirectUri(),
    scope: config.scopes.join(' '),
    code_challenge: await oauth.calculatePKCECodeChallenge(pending.verifier),
    code_challenge_method: 'S256',
    state: pending.state,
    nonce: pending.nonce,
  }).toString();
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  window.location.assign(url);
}

/** True when this load is the issuer's redirect back (a `code` or an `error`, with `state`). */
export function isCallback(): boolean {
  const params = new URLSearchParams(window.location.search);
  return params.has('state') && (params.has('code') || params.has('error'));
}

/** Why a sign-in failed, in words an operator can act on (the IdP's own description when it gave one). */
function describe(error: unknown): string {
  if (error instanceof oauth.AuthorizationResponseError) {
    return `The identity provider refused the sign-in: ${error.error_description ?? error.error}`;
  }
  if (error instanceof oauth.ResponseBodyError) {
    return `The identity provider refused the code exchange: ${error.error_description ?? error.error}`;
  }
  return `Sign-in failed: ${error instanceof Error ? error.message : String(error)}`;
}

/**
 * Completes the redirect back: checks `state`, exchanges the code with the
 * PKCE verifier, checks the ID token's claims and nonce. The query (code,
 * state) is taken out of the address bar whatever the outcome.
 */
export async function finishSignIn(config: OidcConfig): Promise<SignedIn> {
  const current = new URL(window.location.href);
  const raw = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  const pending = raw === null ? undefined : (JSON.parse(raw) as Pending);
  window.history.replaceState(null, '', `${redirectUri()}${pending?.returnTo || current.hash}`);
  try {
    if (pending === undefined)
      throw new Error('this tab did not start a sign-in (or it was already completed)');
    const as = await discover(config);
    const client: oauth.Client = { client_id: config.clientId };
    const params = oauth.validateAuthResponse(as, client, current, pending.state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      params,
      redirectUri(),
      pending.verifier,
    );
    const result = await oauth.processAuthorizationCodeResponse(as, client, response, {
      expectedNonce: pending.nonce,
      requireIdToken: true,
    });
    const claims = oauth.getValidatedIdTokenClaims(result);
    const token = config.bearer === 'id_token' ? result.id_token : result.access_token;
    if (token === undefined) throw new Error(`the token endpoint returned no ${config.bearer}`);
    const deadlines = [
      result.expires_in === undefined ? undefined : Date.now() + result.expires_in * 1000,
      config.bearer === 'id_token' && claims ? claims.exp * 1000 : undefined,
      jwtExpiry(token),
    ].filter((d): d is number => d !== undefined);
    return {
      token,
      expiresAt: deadlines.length === 0 ? undefined : Math.min(...deadlines) - EXPIRY_MARGIN_MS,
    };
  } catch (error) {
    throw new Error(describe(error));
  }
}
