import createClient, { type Middleware } from 'openapi-fetch';
import { RUN_KINDS as DOMAIN_RUN_KINDS } from '../../../shared/domain/run-kind.ts';
import {
  RUN_STATES as DOMAIN_RUN_STATES,
  TERMINAL_STATES as DOMAIN_TERMINAL_STATES,
} from '../../../shared/domain/run-state.ts';
import type { components, paths } from './schema.d.ts';

export type Schemas = components['schemas'];
export type Run = Schemas['Run'];
export type RunState = Run['state'];
export type RunKind = Run['kind'];
export type Target = Schemas['Target'];
export type Asset = Schemas['AssetList']['assets'][number];
export type LogLine = Schemas['LogPage']['lines'][number];
export type BatchRollup = Schemas['BatchRollup'];
export type BatchSubmitted = Schemas['BatchSubmitted'];
export type Problem = Schemas['Problem'];
export type SubmitRunRequest = Schemas['SubmitRunRequest'];
export type TargetBody = Schemas['TargetBody'];

// The domain's lists (dependency-free modules), typed as the API's schema says: a state or kind the
// API does not know fails to compile here.
export const RUN_STATES: readonly RunState[] = DOMAIN_RUN_STATES;
export const TERMINAL_STATES: ReadonlySet<RunState> = new Set(DOMAIN_TERMINAL_STATES);
export const RUN_KINDS: readonly RunKind[] = DOMAIN_RUN_KINDS;

/**
 * The bearer token lives in sessionStorage: it survives a reload of the tab
 * but not the tab itself, and never appears in a URL. A token from OIDC
 * sign-in carries its expiry: at that moment the tab returns to sign-in and
 * says why. Listeners hear when it is set or dropped (sign-out, expiry, or
 * the API refusing it).
 */
const TOKEN_KEY = 'remote-worker.token';
const EXPIRES_KEY = 'remote-worker.token-expires';
type SessionListener = (reason?: string) => void;
const listeners = new Set<SessionListener>();
/**
 * Why the last sign-out happened, kept in the tab: a 401 can arrive before the app has subscribed, or just
 * before a reload, and the sign-in page must still say why.
 */
const REASON_KEY = 'remote-worker.signed-out-reason';
let expiryTimer: ReturnType<typeof setTimeout> | undefined;

const expiresAt = (): number | undefined => {
  const raw = sessionStorage.getItem(EXPIRES_KEY);
  return raw === null ? undefined : Number(raw);
};
const expiredReason = (at: number) =>
  `Your sign-in expired at ${new Date(at).toLocaleTimeString()}. Sign in again.`;

function watchExpiry(): void {
  clearTimeout(expiryTimer);
  const at = expiresAt();
  if (at === undefined) return;
  // setTimeout holds at most 2^31-1 ms (about 24 days); a token living longer is checked again then.
  expiryTimer = setTimeout(
    () => (Date.now() >= at ? session.signOut(expiredReason(at)) : watchExpiry()),
    Math.min(Math.max(at - Date.now(), 0), 2 ** 31 - 1),
  );
}

export const session = {
  token(): string | null {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const at = expiresAt();
    if (token !== null && at !== undefined && Date.now() >= at) {
      session.signOut(expiredReason(at));
      return null;
    }
    return token;
  },
  lastReason: (): string | undefined => sessionStorage.getItem(REASON_KEY) ?? undefined,
  /** `expiresAt`: milliseconds since the epoch, for tokens that say when they end. */
  signIn(token: string, expiresAt?: number): void {
    sessionStorage.setItem(TOKEN_KEY, token);
    if (expiresAt === undefined) sessionStorage.removeItem(EXPIRES_KEY);
    else sessionStorage.setItem(EXPIRES_KEY, String(expiresAt));
    sessionStorage.removeItem(REASON_KEY);
    watchExpiry();
    for (const l of listeners) l();
  },
  signOut(reason?: string): void {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(EXPIRES_KEY);
    clearTimeout(expiryTimer);
    if (reason === undefined) sessionStorage.removeItem(REASON_KEY);
    else sessionStorage.setItem(REASON_KEY, reason);
    for (const l of listeners) l(reason);
  },
  subscribe(listener: SessionListener): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};
watchExpiry();

const auth: Middleware = {
  onRequest({ request }) {
    const token = session.token();
    if (token !== null) request.headers.set('authorization', `Bearer ${token}`);
    return request;
  },
  onResponse({ response }) {
    // Any 401 means the token is wrong or no longer accepted: back to sign-in, whatever page asked.
    if (response.status === 401 && session.token() !== null) {
      session.signOut('The API refused the token (wrong or expired). Sign in again.');
    }
    return response;
  },
};

function clientFor(baseUrl: string) {
  const client = createClient<paths>({ baseUrl });
  client.use(auth);
  return client;
}

/**
 * The one client for every route, typed from the OpenAPI document. The API is
 * on the console's own origin in local mode; a deployed console points it at
 * the API's URL from config.json (configureApi, before the app renders).
 */
// Reassigned once by configureApi, before the app renders; importers read the live binding.
export let api = clientFor(window.location.origin);

export function configureApi(baseUrl: string): void {
  api = clientFor(baseUrl.replace(/\/+$/, ''));
}

/** A problem the UI can show for a failure that never reached the API (network down, bad JSON). */
export function networkProblem(error: unknown): Problem {
  return {
    type: 'about:blank',
    title: 'The API could not be reached',
    status: 0,
    detail: error instanceof Error ? error.message : String(error),
  };
}

/** openapi-fetch hands back whatever the error body parsed to; make it a Problem the views can rely on. */
export function asProblem(error: unknown, response?: Response): Problem {
  if (typeof error === 'object' && error !== null && 'title' in error && 'status' in error) {
    return error as Problem;
  }
  return {
    type: 'about:blank',
    title: response ? `${response.status} ${response.statusText}` : 'Request failed',
    status: response?.status ?? 0,
  };
}
