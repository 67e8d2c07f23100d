import createClient, { type Middleware } from 'openapi-fetch';
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

export const RUN_STATES: readonly RunState[] = [
  'queued',
  'dispatching',
  'launched',
  'running',
  'succeeded',
  'failed',
  'cancelled',
  'timed_out',
  'refused',
];
export const TERMINAL_STATES: ReadonlySet<RunState> = new Set([
  'succeeded',
  'failed',
  'cancelled',
  'timed_out',
  'refused',
]);
export const RUN_KINDS: readonly RunKind[] = ['vm', 'cluster_play', 'database_play', 'k8s_op', 'portainer'];

/**
 * The bearer token lives in sessionStorage: it survives a reload of the tab
 * but not the tab itself, and never appears in a URL. Listeners hear when it
 * is set or dropped (sign-out, or the API refusing it).
 */
const TOKEN_KEY = 'remote-worker.token';
type SessionListener = (reason?: string) => void;
const listeners = new Set<SessionListener>();
/** Why the last sign-out happened: a 401 can arrive before the app has subscribed, and must still be shown. */
let lastReason: string | undefined;

export const session = {
  token: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  lastReason: (): string | undefined => lastReason,
  signIn(token: string): void {
    sessionStorage.setItem(TOKEN_KEY, token);
    lastReason = undefined;
    for (const l of listeners) l();
  },
  signOut(reason?: string): void {
    sessionStorage.removeItem(TOKEN_KEY);
    lastReason = reason;
    for (const l of listeners) l(reason);
  },
  subscribe(listener: SessionListener): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

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

/**
 * The one client for every route, typed from the OpenAPI document. The API is
 * on the console's own origin in local mode; a deployed console is built with
 * VITE_API_URL pointing at the API's origin.
 */
export const api = createClient<paths>({
  baseUrl: (import.meta.env.VITE_API_URL as string | undefined) ?? window.location.origin,
});
api.use(auth);

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
