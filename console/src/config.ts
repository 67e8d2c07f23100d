/**
 * What a deployed console reads from `/config.json` at start (the stack
 * writes it: infra/constructs/console-site.ts, ConsoleRuntimeConfig). Local
 * mode has none: the API is the console's own origin and sign-in is the
 * token local mode printed.
 */
export interface OidcConfig {
  readonly issuer: string;
  readonly clientId: string;
  readonly scopes: readonly string[];
  /** Which token the API's JWT authorizer is given as the bearer. */
  readonly bearer: 'access_token' | 'id_token';
}

export interface ConsoleConfig {
  readonly apiUrl: string;
  readonly oidc?: OidcConfig;
}

const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/** Checks the shape of a parsed config.json; throws naming the first key that is wrong. */
export function parseConfig(raw: unknown): ConsoleConfig {
  const fail = (key: string): never => {
    throw new Error(`config.json: ${key} is missing or not what the console expects`);
  };
  if (typeof raw !== 'object' || raw === null) return fail('the document');
  const { apiUrl, oidc } = raw as Record<string, unknown>;
  if (typeof apiUrl !== 'string' || !URL.canParse(apiUrl)) return fail('apiUrl');
  if (oidc === undefined) return { apiUrl };
  if (typeof oidc !== 'object' || oidc === null) return fail('oidc');
  const o = oidc as Record<string, unknown>;
  if (typeof o.issuer !== 'string' || !URL.canParse(o.issuer)) return fail('oidc.issuer');
  if (typeof o.clientId !== 'string' || o.clientId === '') return fail('oidc.clientId');
  if (!isStrings(o.scopes) || !o.scopes.includes('openid')) return fail('oidc.scopes');
  const bearer = o.bearer ?? 'access_token';
  if (bearer !== 'access_token' && bearer !== 'id_token') return fail('oidc.bearer');
  return { apiUrl, oidc: { issuer: o.issuer, clientId: o.clientId, scopes: o.scopes, bearer } };
}

/**
 * `config.json` beside index.html. Where there is none (local mode answers
 * that path with 401 or 404, it being an API path there) the console talks to
 * its own origin; a config that exists but does not parse is an error, never
 * a silent fall-back to token sign-in.
 */
export async function loadConfig(): Promise<ConsoleConfig> {
  const local: ConsoleConfig = {
    apiUrl: (import.meta.env.VITE_API_URL as string | undefined) ?? window.location.origin,
  };
  const response = await fetch(new URL('config.json', window.location.href), {
    cache: 'no-store',
    headers: { accept: 'application/json' },
  });
  if (!response.ok) {
    // Drained, not left pending: an unread body keeps the request open (and the page never network-idle).
    await response.arrayBuffer();
    return local;
  }
  return parseConfig(await response.json());
}
