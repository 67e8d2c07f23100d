import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  PasswordSafeBroker,
  type PasswordSafeBrokerOptions,
  passwordSafeBrokerFromSettings,
} from '../../shared/adapters/password-safe/broker.ts';
import { checkoutMinutes } from '../../shared/domain/checkout.ts';
import {
  LauncherUnavailableError,
  LaunchRejectedError,
  SettingsInvalidError,
} from '../../shared/domain/errors.ts';
import { withCheckedOutAccount } from '../support/checkout.ts';
import {
  type FakePasswordSafe,
  type InjectedFailure,
  startFakePasswordSafe,
} from '../support/fake-password-safe.ts';

/*
 * PasswordSafeBroker over the global fetch against a loopback fake of the
 * BeyondTrust Password Safe public API v3 (test/support/fake-password-safe.ts).
 * Where the fake differs from Password Safe — what these tests do not prove:
 * - Plain http on 127.0.0.1. Production is https with the system trust store
 *   (plus NODE_EXTRA_CA_CERTS); the cookie's `secure` flag is not enforced.
 * - Only API-key sign-in (`PS-Auth key=…; runas=…;`): no user password in the
 *   header, no OAuth client credentials, no IP or X-Forwarded-For rules, no
 *   API registration policies, no session timeout.
 * - Every request is approved at once: no approvers, access-policy schedules,
 *   ticket systems, "pending" state, or request-duration limits beyond
 *   1–525600 minutes. Requests expire only when a test says so.
 * - 409 is answered whenever any user holds an active request for the
 *   account; the real conflict window also depends on the policy and on
 *   DurationMinutes. The `ConflictOption` body field is not implemented.
 * - Error codes and bodies are the fake's choice: a refused check-in of a
 *   request that is no longer active answers 403 "Request is not active";
 *   Password Safe's own codes (4031…) and texts differ. The `Status` strings
 *   of `GET Requests` ("Active", "Released", "Expired") are a guess; the
 *   broker relies only on the `status=active` filter.
 * - ManagedAccounts answers `SystemId`/`AccountId`, Requests answers
 *   `SystemID`/`AccountID` (as documented); the broker reads both casings.
 *   No paging (`limit`/`offset`), no `type`/`workgroupName` filters, names
 *   match case-insensitively.
 * - Passwords never rotate on check-in.
 */

const API_KEY = `canary-api-key-${randomUUID()}`;
const RUN_AS = 'svc-remote-worker';
const PASSWORD = `canary-password-${randomUUID()}`;

let ps: FakePasswordSafe;

function broker(options: Partial<PasswordSafeBrokerOptions> = {}): PasswordSafeBroker {
  return new PasswordSafeBroker({
    baseUrl: ps.baseUrl,
    apiKey: API_KEY,
    runAs: RUN_AS,
    checkinRetryBaseMs: 10,
    ...options,
  });
}

const request = (account: string) => ({ account, reason: 'run 01TEST', durationMinutes: 60 });

/** Everything an error exposes to a log line: message, stack, causes, own fields. */
function everythingIn(error: unknown): string {
  const parts: string[] = [];
  let e: unknown = error;
  for (let depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    parts.push(String(e), (e as Error).stack ?? '', JSON.stringify(e));
    e = (e as { cause?: unknown }).cause;
  }
  return parts.join('\n');
}

function expectNoSecrets(error: unknown): void {
  const text = everythingIn(error);
  expect(text).not.toContain(API_KEY);
  expect(text).not.toContain(PASSWORD);
  for (const cookie of ps.issuedCookies) expect(text).not.toContain(cookie);
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!(outcome instanceof Error)) throw new Error('expected a rejection');
  return outcome;
}

beforeEach(async () => {
  ps = await startFakePasswordSafe({ apiKey: API_KEY, runAs: RUN_AS });
});

afterEach(async () => {
  // Every operation signs out again, whatever happened.
  expect(ps.openSessions()).toBe(0);
  await ps.close();
});

describe('PasswordSafeBroker checkout', () => {
  it('signs in with the PS-Auth header, then sends only the session cookie, and signs out', async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });

    await broker().checkout(request('pg-local/dbadmin'));

    const [signIn, ...rest] = ps.calls;
    expect(signIn).toMatchObject({ method: 'POST', route: 'Auth/SignAppin' });
    expect(signIn?.authorization).toBe(`PS-Auth key=${API_KEY}; runas=${RUN_AS};`);
    expect(rest.map((c) => `${c.method} ${c.route}`)).toEqual([
      'GET ManagedAccounts',
      'POST Requests',
      `GET Credentials/${ps.requests[0]?.requestId}`,
      'POST Auth/Signout',
    ]);
    for (const call of rest) {
      expect(call.authorization, `${call.route} carries no API key`).toBeUndefined();
      expect(call.cookie).toBe(`ASP.NET_SessionId=${ps.issuedCookies[0]}`);
    }
    expect(ps.signIns()).toBe(1);
    expect(ps.signOuts()).toBe(1);
  });

  it('checks out <system>/<account>: one View request with the reason and duration', async () => {
    const account = ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    ps.addAccount({ systemName: 'pg-other', accountName: 'dbadmin', password: 'other-password' });

    const lease = await broker().checkout({
      account: 'pg-local/dbadmin',
      reason: 'run 01ABC',
      durationMinutes: 90,
    });

    expect(ps.calls.find((c) => c.route === 'ManagedAccounts')?.query).toEqual({
      systemName: 'pg-local',
      accountName: 'dbadmin',
    });
    expect(ps.requests).toEqual([
      expect.objectContaining({
        systemId: account.systemId,
        accountId: account.accountId,
        durationMinutes: 90,
        reason: 'run 01ABC',
        accessType: 'View',
        status: 'active',
        credentialReads: 1,
      }),
    ]);
    expect(lease.username).toBe('dbadmin');
    expect(lease.password).toBe(PASSWORD);
    expect(lease.id).toContain(String(ps.requests[0]?.requestId));
    expect(lease.id).not.toContain(PASSWORD);
  });

  it('checks out by an account name alone when exactly one system has it', async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    ps.addAccount({ systemName: 'pg-local', accountName: 'reporter', password: 'reporter-password' });

    const lease = await broker().checkout(request('dbadmin'));

    expect(ps.calls.find((c) => c.route === 'ManagedAccounts')?.query).toEqual({ accountName: 'dbadmin' });
    expect(lease).toMatchObject({ username: 'dbadmin', password: PASSWORD });
  });

  it('refuses an account name that several systems have, naming them, and requests nothing', async () => {
    ps.addAccount({ systemName: 'pg-east', accountName: 'dbadmin', password: PASSWORD });
    ps.addAccount({ systemName: 'pg-west', accountName: 'dbadmin', password: PASSWORD });

    const error = await failure(broker().checkout(request('dbadmin')));

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(error.message).toMatch(
      /dbadmin is ambiguous: 2 systems have it \(pg-east\/dbadmin, pg-west\/dbadmin\)/,
    );
    expect(error.message).toContain('<system>/<account>');
    expect(ps.requests).toEqual([]);
    expectNoSecrets(error);
  });

  it.each([
    ['pg-local/nobody', 'a system/account pair (404)'],
    ['nobody', 'an account name alone (empty list)'],
    ['pg-nowhere/dbadmin', 'an unknown system'],
  ])('refuses a managed account that does not exist: %s, %s', async (account) => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });

    const error = await failure(broker().checkout(request(account)));

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(error.message).toBe(`Password Safe has no managed account ${account} that ${RUN_AS} may request`);
    expect(ps.requests).toEqual([]);
  });

  it('refuses an account reference with an empty part before asking anything', async () => {
    const error = await failure(broker().checkout(request('pg-local/')));

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(error.message).toContain('"pg-local/" is not "<system>/<account>"');
    expect(ps.calls).toEqual([]);
  });

  it('refuses a duration Password Safe would not take, before asking anything', async () => {
    const error = await failure(broker().checkout({ ...request('pg-local/dbadmin'), durationMinutes: 0 }));

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(error.message).toBe(
      'The checkout of pg-local/dbadmin asks for 0 minutes; Password Safe takes 1 to 525600',
    );
    expect(ps.calls).toEqual([]);
  });

  it("reuses this user's open request when Password Safe answers 409", async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    const first = await broker().checkout(request('pg-local/dbadmin'));

    const second = await broker().checkout(request('pg-local/dbadmin'));

    expect(
      ps.calls.filter((c) => c.route === 'Requests' && c.method === 'POST').map((c) => c.status),
    ).toEqual([201, 409]);
    expect(
      ps.calls.some((c) => c.route === 'Requests' && c.method === 'GET' && c.query.status === 'active'),
    ).toBe(true);
    expect(second.id).toBe(first.id);
    expect(second.password).toBe(PASSWORD);
    expect(ps.requests).toHaveLength(1);
    expect(ps.requests[0]?.credentialReads).toBe(2);
  });

  it('reports an account held by another Password Safe user as unavailable (retryable)', async () => {
    const account = ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    ps.openAsOtherUser(account);

    const error = await failure(broker().checkout(request('pg-local/dbadmin')));

    expect(error).toBeInstanceOf(LauncherUnavailableError);
    expect(error.message).toBe(
      'Managed account pg-local/dbadmin is checked out by another Password Safe user; will retry',
    );
  });

  it('checks its own request in again when reading the credential fails', async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    ps.failNext({
      method: 'GET',
      route: /^Credentials\//,
      answer: { status: 500, body: JSON.stringify(PASSWORD) },
    });

    const error = await failure(broker().checkout(request('pg-local/dbadmin')));

    expect(error).toBeInstanceOf(LauncherUnavailableError);
    expect(error.message).toMatch(
      /^Password Safe failed the credential read for pg-local\/dbadmin \(HTTP 500\)/,
    );
    expect(ps.requests.map((r) => r.status)).toEqual(['checked_in']);
    expectNoSecrets(error);
  });

  it('refuses a credential answer that is not a password string, without quoting it', async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    ps.failNext({
      method: 'GET',
      route: /^Credentials\//,
      answer: { status: 200, body: JSON.stringify({ Password: PASSWORD }) },
    });

    const error = await failure(broker().checkout(request('pg-local/dbadmin')));

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(error.message).toContain('without a password string');
    expect(ps.openRequests()).toEqual([]);
    expectNoSecrets(error);
  });

  const transient: [string, InjectedFailure][] = [
    ['a 503 on sign-in', { route: /^Auth\/SignAppin$/, answer: { status: 503 } }],
    ['a 429 on the account lookup', { route: /^ManagedAccounts$/, answer: { status: 429 } }],
    ['a 502 on the request', { method: 'POST', route: /^Requests$/, answer: { status: 502 } }],
    ['a dropped connection', { route: /^ManagedAccounts$/, answer: 'drop' }],
    ['no answer before the deadline', { route: /^ManagedAccounts$/, answer: 'hang' }],
  ];
  it.each(transient)('treats %s as unavailable (retryable)', async (_name, injected) => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    ps.failNext(injected);

    const error = await failure(broker({ timeoutMs: 300 }).checkout(request('pg-local/dbadmin')));

    expect(error).toBeInstanceOf(LauncherUnavailableError);
    expect((error as LauncherUnavailableError).retryable).toBe(true);
    expect(error.message).toContain('pg-local/dbadmin');
    expect(error.message).toMatch(/will retry$/);
    expect(ps.openRequests()).toEqual([]);
    expectNoSecrets(error);
  });

  it('refuses a wrong API key (401) for good, naming the runas user and not the key', async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });

    const error = await failure(broker({ apiKey: `wrong-${API_KEY}` }).checkout(request('pg-local/dbadmin')));

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect((error as LaunchRejectedError).retryable).toBe(false);
    expect(error.message).toBe(
      `Password Safe refused the sign-in as ${RUN_AS} for checkout of pg-local/dbadmin (HTTP 401): "User not authenticated"`,
    );
    expectNoSecrets(error);
  });

  it.each([
    ['403 on the account lookup', { route: /^ManagedAccounts$/, answer: { status: 403 } }],
    ['403 on the request', { method: 'POST', route: /^Requests$/, answer: { status: 403 } }],
    ['404 on the request', { method: 'POST', route: /^Requests$/, answer: { status: 404 } }],
  ] satisfies [string, InjectedFailure][])('refuses for good on a %s', async (_name, injected) => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    ps.failNext(injected);

    const error = await failure(broker().checkout(request('pg-local/dbadmin')));

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(error.message).toMatch(/^Password Safe refused the .* for pg-local\/dbadmin \(HTTP 40[34]\)/);
    expect(ps.openRequests()).toEqual([]);
  });

  it('never quotes the API key or the session cookie, even when Password Safe echoes them', async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    const echo = (call: { authorization?: string | undefined; cookie?: string | undefined }) =>
      JSON.stringify(`denied: auth=${call.authorization ?? ''} cookie=${call.cookie ?? ''} key=${API_KEY}`);
    ps.failNext({ route: /^Auth\/SignAppin$/, answer: { status: 401, body: echo } });
    ps.failNext({ route: /^ManagedAccounts$/, answer: { status: 403, body: echo } });

    const signInError = await failure(broker().checkout(request('pg-local/dbadmin')));
    const lookupError = await failure(broker().checkout(request('pg-local/dbadmin')));

    expect(signInError.message).toContain('denied: auth=PS-Auth key=********; runas=svc-remote-worker;');
    expect(lookupError.message).toContain('cookie=ASP.NET_SessionId=********');
    expectNoSecrets(signInError);
    expectNoSecrets(lookupError);
  });

  it('refuses a redirect (a wrong base URL, a login page) instead of following it', async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    ps.failNext({ route: /^Auth\/SignAppin$/, answer: { status: 302 } });

    const error = await failure(broker().checkout(request('pg-local/dbadmin')));

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(error.message).toBe(
      `Password Safe answered the sign-in as ${RUN_AS} for checkout of pg-local/dbadmin with a redirect (HTTP 302); check password_safe_url`,
    );
    expect(ps.calls).toHaveLength(1);
  });

  it('refuses a base URL where no Password Safe API answers', async () => {
    const error = await failure(
      broker({ baseUrl: ps.baseUrl.replace('/public/v3', '/no-such-base') }).checkout(
        request('pg-local/dbadmin'),
      ),
    );

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(error.message).toContain(`sign-in as ${RUN_AS} for checkout of pg-local/dbadmin (HTTP 404)`);
  });
});

describe('PasswordSafeBroker checkin', () => {
  it('checks the request in, in a session of its own, with a reason', async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    const lease = await broker().checkout(request('pg-local/dbadmin'));

    await broker().checkin(lease.id);

    const checkin = ps.calls.find((c) => c.method === 'PUT');
    expect(checkin?.route).toBe(`Requests/${ps.requests[0]?.requestId}/Checkin`);
    expect(checkin?.cookie).toBe(`ASP.NET_SessionId=${ps.issuedCookies[1]}`);
    expect(ps.requests[0]).toMatchObject({ status: 'checked_in', checkinReason: 'Remote Worker run ended' });
    expect(ps.signIns()).toBe(2);
  });

  it('is idempotent: a checked-in, expired or unknown request counts as checked in', async () => {
    const account = ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    const lease = await broker().checkout(request('pg-local/dbadmin'));
    await broker().checkin(lease.id);
    const expiring = await broker().checkout(request('pg-local/dbadmin'));
    ps.expire(ps.requests[1]?.requestId ?? 0);

    await broker().checkin(lease.id);
    await broker().checkin(expiring.id);
    await broker().checkin('ps1:987654:pg-local%2Fdbadmin');

    expect(ps.calls.filter((c) => c.method === 'PUT').map((c) => c.status)).toEqual([204, 403, 403, 404]);
    expect(ps.requests.map((r) => [r.accountId, r.status])).toEqual([
      [account.accountId, 'checked_in'],
      [account.accountId, 'expired'],
    ]);
  });

  it('retries a transient check-in failure and then succeeds', async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    const lease = await broker().checkout(request('pg-local/dbadmin'));
    ps.failNext({ method: 'PUT', route: /\/Checkin$/, answer: { status: 503 } });

    await broker().checkin(lease.id);

    expect(ps.calls.filter((c) => c.method === 'PUT').map((c) => c.status)).toEqual([503, 204]);
    expect(ps.openRequests()).toEqual([]);
  });

  it('gives up as unavailable when Password Safe stays down, leaving the request open', async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    const lease = await broker().checkout(request('pg-local/dbadmin'));
    ps.failNext({ method: 'PUT', route: /\/Checkin$/, answer: { status: 503 }, times: 5 });

    const error = await failure(broker({ checkinAttempts: 2 }).checkin(lease.id));

    expect(error).toBeInstanceOf(LauncherUnavailableError);
    expect(error.message).toMatch(/check-in of request \d+ for pg-local\/dbadmin \(HTTP 503\)/);
    expect(ps.calls.filter((c) => c.method === 'PUT')).toHaveLength(2);
    expect(ps.openRequests()).toHaveLength(1);
    expectNoSecrets(error);
  });

  it('refuses when Password Safe denies a check-in of a request that is still active', async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    const lease = await broker().checkout(request('pg-local/dbadmin'));
    ps.failNext({ method: 'PUT', route: /\/Checkin$/, answer: { status: 403 } });

    const error = await failure(broker().checkin(lease.id));

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(error.message).toMatch(/refused the check-in of request \d+ for pg-local\/dbadmin \(HTTP 403\)/);
    expect(ps.openRequests()).toHaveLength(1);
  });

  it('refuses a lease id it did not make, asking nothing', async () => {
    const error = await failure(broker().checkin('ecs:not-a-lease'));

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(ps.calls).toEqual([]);
  });
});

describe('withCheckedOutAccount', () => {
  it('checks the account in after use returns and after use throws', async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    const b = broker();

    const seen = await withCheckedOutAccount(b, request('pg-local/dbadmin'), async (lease) => lease.username);
    const thrown = await failure(
      withCheckedOutAccount(b, request('pg-local/dbadmin'), async () => {
        expect(ps.openRequests()).toHaveLength(1);
        throw new Error('play failed');
      }),
    );

    expect(seen).toBe('dbadmin');
    expect(thrown.message).toBe('play failed');
    expect(ps.requests.map((r) => r.status)).toEqual(['checked_in', 'checked_in']);
  });

  it("keeps use's outcome when the check-in fails, reporting the check-in failure", async () => {
    ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: PASSWORD });
    ps.failNext({ method: 'PUT', route: /\/Checkin$/, answer: { status: 503 }, times: 2 });
    const reported: unknown[] = [];

    const result = await withCheckedOutAccount(
      broker({ checkinAttempts: 1 }),
      request('pg-local/dbadmin'),
      async () => 'play ok',
      { onCheckinError: (error) => reported.push(error) },
    );
    const unreported = await failure(
      withCheckedOutAccount(
        broker({ checkinAttempts: 1 }),
        request('pg-local/dbadmin'),
        async () => 'play ok',
      ),
    );

    expect(result).toBe('play ok');
    expect(reported).toEqual([expect.any(LauncherUnavailableError)]);
    expect(unreported).toBeInstanceOf(LauncherUnavailableError);
  });
});

describe('Password Safe settings', () => {
  it('names every missing setting', () => {
    const error = (() => {
      try {
        passwordSafeBrokerFromSettings(
          { password_safe_url: undefined, password_safe_runas: undefined },
          API_KEY,
        );
      } catch (e) {
        return e;
      }
    })();

    expect(error).toBeInstanceOf(SettingsInvalidError);
    expect((error as SettingsInvalidError).problems.map((p) => p.path)).toEqual([
      'password_safe_url',
      'password_safe_runas',
    ]);
  });

  it('refuses an API key that would break the header, without quoting it', () => {
    const badKey = `${API_KEY}; runas=admin`;

    expect(() => new PasswordSafeBroker({ baseUrl: ps.baseUrl, apiKey: badKey, runAs: RUN_AS })).toThrow(
      SettingsInvalidError,
    );
    try {
      new PasswordSafeBroker({ baseUrl: ps.baseUrl, apiKey: badKey, runAs: RUN_AS });
    } catch (error) {
      expect(everythingIn(error)).not.toContain(API_KEY);
    }
  });

  it('checks out for the configured minutes, or the run timeout when longer', () => {
    expect(checkoutMinutes(60, 600)).toBe(60);
    expect(checkoutMinutes(60, 3 * 3600 + 1)).toBe(181);
    expect(checkoutMinutes(60, 10 ** 9)).toBe(525_600);
  });
});
