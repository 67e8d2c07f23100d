import type { Settings } from '../../config/settings.ts';
import { MAX_CHECKOUT_MINUTES } from '../../domain/checkout.ts';
import {
  type FieldError,
  LauncherUnavailableError,
  LaunchRejectedError,
  SettingsInvalidError,
} from '../../domain/errors.ts';
import type { CheckoutRequest, CredentialBroker, Lease } from '../../ports/credential-broker.ts';
import { withRetry } from '../retry.ts';
import { type ApiAnswer, type PasswordSafeApi, PasswordSafeSession } from './session.ts';

/**
 * CredentialBroker over BeyondTrust Password Safe (public API v3): the
 * just-in-time admin login of a registered database.
 *
 * Checkout: sign in → find the managed account (`<system>/<account>`, or an
 * account name that is unique among the accounts the runas user may request)
 * → `POST Requests` (View access, the run's reason and duration) → read the
 * password from `GET Credentials/{requestId}` → sign out. When Password Safe
 * answers 409 because this user already holds an open request for the account
 * (a redelivered dispatch, or a second run on the same database), that request
 * is reused. A request this checkout created is checked in again when reading
 * the credential fails, so a failed checkout holds nothing.
 *
 * Check-in runs in another process, later (when the run ends), so the lease id
 * carries what it needs — the request id, plus the account reference for
 * messages — and check-in signs in on its own. It is idempotent: a request
 * that is already checked in, has expired or is unknown counts as done.
 * Transient failures of a check-in are retried a few times at once.
 *
 * Two runs on one account share one request: the first to end checks it in,
 * and if the account rotates on check-in the other run's password stops
 * working. Serialise runs per managed account if that matters.
 *
 * Nothing secret reaches an error: messages name the step and the account,
 * never the API key, the session cookie or the password.
 *
 * @example
 * const broker = passwordSafeBrokerFromSettings(settings, await secrets.get(settings.password_safe_api_key_secret!));
 * const lease = await broker.checkout({ account: 'pg-prod-01/dbadmin', reason: 'run 01J…', durationMinutes: 60 });
 * try { play(lease.username, lease.password); } finally { await broker.checkin(lease.id); }
 */
export interface PasswordSafeBrokerOptions {
  /** API base, `https://ps.example.com/BeyondTrust/api/public/v3` (setting `password_safe_url`). */
  readonly baseUrl: string;
  /** The API key itself (the composition root resolves `password_safe_api_key_secret`). */
  readonly apiKey: string;
  /** The Password Safe user the key acts as (`password_safe_runas`). */
  readonly runAs: string;
  /** Deadline of one API call; default 30 s. */
  readonly timeoutMs?: number;
  /** Tries of one check-in when Password Safe is unavailable; default 3. */
  readonly checkinAttempts?: number;
  /** First back-off of a check-in retry; default 500 ms. */
  readonly checkinRetryBaseMs?: number;
}

const LEASE_PREFIX = 'ps1';

/** The fields we use of a ManagedAccount; the ID casing differs between API answers, so both are read. */
interface ManagedAccount {
  readonly SystemId?: number;
  readonly SystemID?: number;
  readonly AccountId?: number;
  readonly AccountID?: number;
  readonly SystemName?: string;
  readonly AccountName?: string;
}

interface ResolvedAccount {
  readonly systemId: number;
  readonly accountId: number;
  readonly accountName: string;
}

interface RequestSummary {
  readonly RequestID?: number;
  readonly SystemID?: number;
  readonly AccountID?: number;
}

/** `system/account` → parts; a name without `/` is an account name to look up across systems. */
function parseAccountReference(account: string): { system?: string; account: string } {
  const slash = account.indexOf('/');
  const parts =
    slash < 0 ? { account } : { system: account.slice(0, slash), account: account.slice(slash + 1) };
  if (parts.account.trim() === '' || parts.system?.trim() === '') {
    throw new LaunchRejectedError(
      `Managed account "${account}" is not "<system>/<account>" or an account name`,
    );
  }
  return parts;
}

/** Lease ids: `ps1:<requestId>:<account reference, URI-encoded>` — nothing secret. */
function leaseId(requestId: number, account: string): string {
  return `${LEASE_PREFIX}:${requestId}:${encodeURIComponent(account)}`;
}

function parseLeaseId(id: string): { requestId: number; account: string } {
  const match = new RegExp(`^${LEASE_PREFIX}:(\\d{1,15}):(.*)$`).exec(id);
  let account: string | undefined;
  try {
    account = match?.[2] === undefined ? undefined : decodeURIComponent(match[2]);
  } catch {
    account = undefined;
  }
  const requestId = Number(match?.[1]);
  if (account === undefined || !Number.isSafeInteger(requestId) || requestId <= 0) {
    throw new LaunchRejectedError(`"${id}" is not a Password Safe lease id`);
  }
  return { requestId, account };
}

const idOf = (...values: (number | undefined)[]): number | undefined =>
  values.find((v) => typeof v === 'number' && Number.isSafeInteger(v));

function parseJson(answer: ApiAnswer, step: string): unknown {
  try {
    return JSON.parse(answer.text);
  } catch {
    throw new LaunchRejectedError(`Password Safe answered the ${step} with something that is not JSON`);
  }
}

export class PasswordSafeBroker implements CredentialBroker {
  readonly #api: PasswordSafeApi;
  readonly #checkinAttempts: number;
  readonly #checkinRetryBaseMs: number;

  constructor(options: PasswordSafeBrokerOptions) {
    const problems: FieldError[] = [];
    // These two go into a header: a `;` or a line break would change its meaning.
    if (options.apiKey === '' || /[;\r\n]/.test(options.apiKey)) {
      problems.push({
        path: 'password_safe_api_key_secret',
        message: 'the API key is empty or holds ; or a line break',
      });
    }
    if (options.runAs.trim() === '' || /[;\r\n]/.test(options.runAs)) {
      problems.push({ path: 'password_safe_runas', message: 'must be a user name without ; or line breaks' });
    }
    if (problems.length > 0) throw new SettingsInvalidError(problems);
    this.#api = {
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      apiKey: options.apiKey,
      runAs: options.runAs,
      timeoutMs: options.timeoutMs ?? 30_000,
    };
    this.#checkinAttempts = options.checkinAttempts ?? 3;
    this.#checkinRetryBaseMs = options.checkinRetryBaseMs ?? 500;
  }

  async checkout(request: CheckoutRequest): Promise<Lease> {
    const reference = parseAccountReference(request.account);
    const what = `checkout of ${request.account}`;
    if (
      !Number.isInteger(request.durationMinutes) ||
      request.durationMinutes < 1 ||
      request.durationMinutes > MAX_CHECKOUT_MINUTES
    ) {
      throw new LaunchRejectedError(
        `The ${what} asks for ${request.durationMinutes} minutes; Password Safe takes 1 to ${MAX_CHECKOUT_MINUTES}`,
      );
    }
    const session = await PasswordSafeSession.signIn(this.#api, what);
    try {
      const account = await this.#findAccount(session, reference, request.account);
      const { requestId, created } = await this.#openRequest(session, account, request);
      try {
        const password = await this.#readPassword(session, requestId, request.account);
        return { id: leaseId(requestId, request.account), username: account.accountName, password };
      } catch (error) {
        // Hold nothing after a failed checkout; a reused request belongs to whoever opened it.
        if (created) await this.#checkinOnce(session, requestId, request.account).catch(() => undefined);
        throw error;
      }
    } finally {
      await session.signOut();
    }
  }

  async checkin(id: string): Promise<void> {
    const { requestId, account } = parseLeaseId(id);
    await withRetry(
      async () => {
        const session = await PasswordSafeSession.signIn(this.#api, `check-in of ${account}`);
        try {
          await this.#checkinOnce(session, requestId, account);
        } finally {
          await session.signOut();
        }
      },
      {
        retryable: (error) => error instanceof LauncherUnavailableError,
        attempts: this.#checkinAttempts,
        baseMs: this.#checkinRetryBaseMs,
      },
    );
  }

  async #findAccount(
    session: PasswordSafeSession,
    reference: { system?: string; account: string },
    label: string,
  ): Promise<ResolvedAccount> {
    const step = `managed account lookup for ${label}`;
    const query = new URLSearchParams({
      ...(reference.system === undefined ? {} : { systemName: reference.system }),
      accountName: reference.account,
    });
    const answer = await session.call('GET', `ManagedAccounts?${query}`, step, { accept: [404] });
    const notFound = new LaunchRejectedError(
      `Password Safe has no managed account ${label} that ${this.#api.runAs} may request`,
    );
    if (answer.status === 404) throw notFound;
    const body = parseJson(answer, step);
    // Both names given: one object. An account name alone: a list, possibly of several systems.
    const candidates = (Array.isArray(body) ? body : [body]).filter(
      (a): a is ManagedAccount =>
        typeof a === 'object' &&
        a !== null &&
        (reference.system === undefined ||
          (a as ManagedAccount).SystemName === undefined ||
          (a as ManagedAccount).SystemName?.toLowerCase() === reference.system.toLowerCase()),
    );
    if (candidates.length === 0) throw notFound;
    if (candidates.length > 1) {
      const names = candidates
        .slice(0, 5)
        .map((a) => `${a.SystemName ?? '?'}/${a.AccountName ?? reference.account}`);
      throw new LaunchRejectedError(
        `Managed account ${label} is ambiguous: ${candidates.length} systems have it (${names.join(', ')}${
          candidates.length > names.length ? ', …' : ''
        }); name it as <system>/<account>`,
      );
    }
    const [found] = candidates as [ManagedAccount];
    const systemId = idOf(found.SystemId, found.SystemID);
    const accountId = idOf(found.AccountId, found.AccountID);
    if (systemId === undefined || accountId === undefined) {
      throw new LaunchRejectedError(`Password Safe answered the ${step} without system and account ids`);
    }
    return { systemId, accountId, accountName: found.AccountName ?? reference.account };
  }

  /** `POST Requests`; on 409, this user's open request for the same account. */
  async #openRequest(
    session: PasswordSafeSession,
    account: ResolvedAccount,
    request: CheckoutRequest,
  ): Promise<{ requestId: number; created: boolean }> {
    const step = `credential request for ${request.account}`;
    const answer = await session.call('POST', 'Requests', step, {
      body: {
        SystemID: account.systemId,
        AccountID: account.accountId,
        DurationMinutes: request.durationMinutes,
        Reason: request.reason,
        AccessType: 'View',
      },
      accept: [409],
    });
    if (answer.status !== 409) {
      const id = Number(parseJson(answer, step));
      if (!Number.isSafeInteger(id) || id <= 0) {
        throw new LaunchRejectedError(`Password Safe answered the ${step} without a request id`);
      }
      return { requestId: id, created: true };
    }
    const open = await this.#activeRequests(session, `open request lookup for ${request.account}`);
    const mine = open.find((r) => r.SystemID === account.systemId && r.AccountID === account.accountId);
    const id = idOf(mine?.RequestID);
    if (id === undefined) {
      // The conflicting request is someone else's: the account is busy, which passes.
      throw new LauncherUnavailableError(
        `Managed account ${request.account} is checked out by another Password Safe user; will retry`,
      );
    }
    return { requestId: id, created: false };
  }

  /** `GET Credentials/{id}`: a JSON string. The answer is never quoted in an error: it may be the password. */
  async #readPassword(session: PasswordSafeSession, requestId: number, label: string): Promise<string> {
    const step = `credential read for ${label}`;
    const answer = await session.call('GET', `Credentials/${requestId}`, step, { quoteErrors: false });
    let password: unknown;
    try {
      password = JSON.parse(answer.text);
    } catch {
      password = undefined;
    }
    if (typeof password !== 'string' || password === '') {
      throw new LaunchRejectedError(`Password Safe answered the ${step} without a password string`);
    }
    return password;
  }

  async #activeRequests(session: PasswordSafeSession, step: string): Promise<RequestSummary[]> {
    const body = parseJson(await session.call('GET', 'Requests?status=active', step), step);
    if (!Array.isArray(body))
      throw new LaunchRejectedError(`Password Safe answered the ${step} without a list`);
    return body.filter((r): r is RequestSummary => typeof r === 'object' && r !== null);
  }

  async #checkinOnce(session: PasswordSafeSession, requestId: number, account: string): Promise<void> {
    const step = `check-in of request ${requestId} for ${account}`;
    const answer = await session.call('PUT', `Requests/${requestId}/Checkin`, step, {
      body: { Reason: 'Remote Worker run ended' },
      accept: [400, 403, 404, 409],
    });
    if (answer.status < 300 || answer.status === 404) return;
    // Refused: fine when the request is no longer active (checked in already, expired, denied).
    const active = await this.#activeRequests(session, `request lookup for the ${step}`);
    if (active.some((r) => r.RequestID === requestId)) {
      throw new LaunchRejectedError(
        `Password Safe refused the ${step} (HTTP ${answer.status}) and the request is still active`,
      );
    }
  }
}

/**
 * A broker from the settings and the resolved API key, or the settings error
 * naming what is missing.
 *
 * @example
 * const apiKey = await secrets.get(settings.password_safe_api_key_secret!);
 * const broker = passwordSafeBrokerFromSettings(settings, apiKey);
 */
export function passwordSafeBrokerFromSettings(
  settings: Pick<Settings, 'password_safe_url' | 'password_safe_runas'>,
  apiKey: string,
  options: Omit<PasswordSafeBrokerOptions, 'baseUrl' | 'apiKey' | 'runAs'> = {},
): PasswordSafeBroker {
  const problems: FieldError[] = [];
  if (settings.password_safe_url === undefined) {
    problems.push({ path: 'password_safe_url', message: 'is required for registered databases' });
  }
  if (settings.password_safe_runas === undefined) {
    problems.push({ path: 'password_safe_runas', message: 'is required for registered databases' });
  }
  if (settings.password_safe_url === undefined || settings.password_safe_runas === undefined) {
    throw new SettingsInvalidError(problems);
  }
  return new PasswordSafeBroker({
    ...options,
    baseUrl: settings.password_safe_url,
    apiKey,
    runAs: settings.password_safe_runas,
  });
}
