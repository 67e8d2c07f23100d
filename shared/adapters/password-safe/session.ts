import { type DomainError, LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import { redactAll } from '../../domain/redaction.ts';

/**
 * One signed-in session of the BeyondTrust Password Safe public API (v3):
 * `POST Auth/SignAppin` with the API key, the session cookie on every call
 * after it, `POST Auth/Signout` at the end. Used by PasswordSafeBroker only.
 *
 * Error rules, shared by every call:
 * - 429, 5xx, a timeout or no answer at all → LauncherUnavailableError
 *   (retryable: the dispatcher tries again later);
 * - any other non-2xx, a redirect, or an answer we cannot read →
 *   LaunchRejectedError (permanent).
 * Messages name the step and the account; a short piece of the server's answer
 * is kept for the operator, with the API key and the session cookie redacted.
 * The key is sent only to `Auth/SignAppin`, never to the other routes.
 *
 * Uses the global `fetch`, which trusts the system CA store (plus
 * `NODE_EXTRA_CA_CERTS`, read at process start); there is no per-call CA
 * option without a custom undici dispatcher, which we do not depend on.
 *
 * @example
 * const session = await PasswordSafeSession.signIn(api, 'checkout of pg-01/dbadmin');
 * try {
 *   const answer = await session.call('GET', 'ManagedAccounts?accountName=dbadmin', 'managed account lookup');
 * } finally {
 *   await session.signOut();
 * }
 */
export interface PasswordSafeApi {
  /** `https://ps.example.com/BeyondTrust/api/public/v3`, without a trailing slash. */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly runAs: string;
  /** Per-call deadline. */
  readonly timeoutMs: number;
}

export interface ApiAnswer {
  readonly status: number;
  readonly text: string;
}

/** How much of an error answer is quoted in a message. */
const SNIPPET_CHARS = 200;
const SIGN_OUT_TIMEOUT_MS = 5000;

/** The server's answer as a short, single-line, secret-free quote. */
function snippet(text: string, secrets: readonly string[]): string {
  const line = text
    .replace(/\p{Cc}+/gu, ' ')
    .trim()
    .slice(0, SNIPPET_CHARS);
  return redactAll(line, secrets);
}

/** `ECONNREFUSED`, `TimeoutError` …: why a call got no answer, without any request detail. */
function noAnswerReason(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return 'timed out';
  }
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  return error instanceof Error ? error.name : 'no answer';
}

export class PasswordSafeSession {
  readonly #api: PasswordSafeApi;
  readonly #cookie: string;
  /** Values that must never be quoted back: the API key and the cookie values. */
  readonly #secrets: readonly string[];
  #signedOut = false;

  private constructor(api: PasswordSafeApi, cookie: string, secrets: readonly string[]) {
    this.#api = api;
    this.#cookie = cookie;
    this.#secrets = secrets;
  }

  /** Sign in with the API key; `what` names the operation in errors ("checkout of pg-01/dbadmin"). */
  static async signIn(api: PasswordSafeApi, what: string): Promise<PasswordSafeSession> {
    const secrets = [api.apiKey];
    const response = await send(
      api,
      'POST',
      'Auth/SignAppin',
      { Authorization: `PS-Auth key=${api.apiKey}; runas=${api.runAs};` },
      undefined,
      api.timeoutMs,
      `sign-in as ${api.runAs} for ${what}`,
    );
    const text = await readText(response, `sign-in as ${api.runAs} for ${what}`);
    if (!response.ok) {
      throw refusal(response.status, `sign-in as ${api.runAs} for ${what}`, snippet(text, secrets));
    }
    // `name=value` of every cookie set: ASP.NET_SessionId, plus any a load balancer adds for stickiness.
    const pairs = response.headers
      .getSetCookie()
      .map((header) => header.split(';', 1)[0]?.trim() ?? '')
      .filter((pair) => /^[^=\s]+=/.test(pair));
    if (pairs.length === 0) {
      throw new LaunchRejectedError(
        `Password Safe sign-in as ${api.runAs} for ${what} answered no session cookie; check password_safe_url`,
      );
    }
    const cookieValues = pairs.map((pair) => pair.slice(pair.indexOf('=') + 1)).filter((v) => v !== '');
    return new PasswordSafeSession(api, pairs.join('; '), [...secrets, ...cookieValues]);
  }

  /**
   * One API call with the session cookie. Answers every status the caller
   * listed in `accept` (2xx always); anything else becomes the domain error
   * the rules above give, naming `step`.
   */
  async call(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    step: string,
    options: {
      readonly body?: unknown;
      readonly accept?: readonly number[];
      readonly quoteErrors?: boolean;
    } = {},
  ): Promise<ApiAnswer> {
    const headers: Record<string, string> = { Cookie: this.#cookie, Accept: 'application/json' };
    if (options.body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await send(
      this.#api,
      method,
      path,
      headers,
      options.body === undefined ? undefined : JSON.stringify(options.body),
      this.#api.timeoutMs,
      step,
    );
    const text = await readText(response, step);
    if (response.ok || options.accept?.includes(response.status)) return { status: response.status, text };
    // An answer that may hold a credential is never quoted, not even redacted.
    throw refusal(response.status, step, options.quoteErrors === false ? '' : snippet(text, this.#secrets));
  }

  /** Best effort and quiet: a session we fail to close expires on the server by itself. */
  async signOut(): Promise<void> {
    if (this.#signedOut) return;
    this.#signedOut = true;
    try {
      const response = await send(
        this.#api,
        'POST',
        'Auth/Signout',
        { Cookie: this.#cookie },
        undefined,
        Math.min(this.#api.timeoutMs, SIGN_OUT_TIMEOUT_MS),
        'sign-out',
      );
      await response.arrayBuffer().catch(() => undefined);
    } catch {
      // Nothing to do: the outcome of the work before it stands.
    }
  }
}

async function send(
  api: PasswordSafeApi,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | undefined,
  timeoutMs: number,
  step: string,
): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(`${api.baseUrl}/${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      // A redirect means a wrong base URL (a login page, http → https): say so rather than follow it.
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new LauncherUnavailableError(
      `Password Safe did not answer the ${step} (${noAnswerReason(error)}); will retry`,
    );
  }
  if (response.status >= 300 && response.status < 400) {
    await response.arrayBuffer().catch(() => undefined);
    throw new LaunchRejectedError(
      `Password Safe answered the ${step} with a redirect (HTTP ${response.status}); check password_safe_url`,
    );
  }
  return response;
}

async function readText(response: Response, step: string): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    throw new LauncherUnavailableError(
      `Password Safe broke off its answer to the ${step} (${noAnswerReason(error)}); will retry`,
    );
  }
}

/** The domain error for a non-2xx answer. */
export function refusal(status: number, step: string, quote: string): DomainError {
  const said = quote === '' ? '' : `: ${quote}`;
  if (status === 429 || status >= 500) {
    return new LauncherUnavailableError(
      `Password Safe failed the ${step} (HTTP ${status})${said}; will retry`,
    );
  }
  return new LaunchRejectedError(`Password Safe refused the ${step} (HTTP ${status})${said}`);
}
