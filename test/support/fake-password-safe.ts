import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A loopback fake of the BeyondTrust Password Safe public API (v3) routes the
 * PasswordSafeBroker uses, written from the public API reference:
 *
 * - `POST Auth/SignAppin` (`Authorization: PS-Auth key=…; runas=…;`) → the
 *   user, and an `ASP.NET_SessionId` session cookie; `POST Auth/Signout`.
 * - `GET ManagedAccounts?systemName&accountName` → one object when both are
 *   given (404 when there is none), else a list.
 * - `POST Requests` `{ SystemID, AccountID, DurationMinutes, Reason, AccessType }`
 *   → 201 with the request id; 409 while any user holds an open request for
 *   the account. `GET Requests?status=all|active|pending` → the signed-in
 *   user's requests.
 * - `GET Credentials/{requestId}` → the password as a JSON string.
 * - `PUT Requests/{requestId}/Checkin` `{ Reason }` → 204; 403 when the
 *   request is no longer active; 404 when unknown.
 *
 * Every route but sign-in needs a live session cookie (401 otherwise).
 * Everything is recorded so tests can assert on the traffic: calls (with the
 * headers that matter), sessions opened and closed, the request lifecycle.
 * Failures are injected per route (`failNext`). Any other route answers 400
 * "unsupported by fake", so a new call fails loudly.
 *
 * Where it differs from the real service is listed at the top of
 * test/integration/password-safe.test.ts.
 *
 * @example
 * const ps = await startFakePasswordSafe({ apiKey: 'k', runAs: 'svc-remote-worker' });
 * ps.addAccount({ systemName: 'pg-local', accountName: 'dbadmin', password: 'pw' });
 * // … new PasswordSafeBroker({ baseUrl: ps.baseUrl, apiKey: 'k', runAs: 'svc-remote-worker' })
 * expect(ps.openRequests()).toEqual([]);
 * await ps.close();
 */
export interface FakeAccount {
  readonly systemId: number;
  readonly systemName: string;
  readonly accountId: number;
  readonly accountName: string;
  password: string;
}

export type FakeRequestStatus = 'active' | 'checked_in' | 'expired';

export interface FakeRequest {
  readonly requestId: number;
  /** The runas user who opened it. */
  readonly user: string;
  readonly systemId: number;
  readonly accountId: number;
  readonly durationMinutes: number;
  readonly reason: string;
  readonly accessType: string;
  status: FakeRequestStatus;
  checkinReason?: string;
  /** How often the credential was read. */
  credentialReads: number;
}

export interface RecordedCall {
  readonly method: string;
  /** Path below the API base, e.g. `Requests/1001/Checkin`. */
  readonly route: string;
  readonly query: Readonly<Record<string, string>>;
  readonly authorization: string | undefined;
  readonly cookie: string | undefined;
  readonly body: string;
  /** What the fake answered (0 when it dropped the connection or never answered). */
  status: number;
}

export interface InjectedFailure {
  readonly method?: string;
  /** Matches the route below the API base (`Credentials/1001`). */
  readonly route: RegExp;
  /**
   * An HTTP answer, `drop` (destroy the socket) or `hang` (never answer). The
   * body is sent as it is (JSON content type); a function sees the call, so an
   * answer can echo what the client sent. Default body: `"Injected failure"`.
   */
  readonly answer:
    | { readonly status: number; readonly body?: string | ((call: RecordedCall) => string) }
    | 'drop'
    | 'hang';
  /** How many matching calls fail; default 1. */
  readonly times?: number;
}

export interface FakePasswordSafe {
  /** `http://127.0.0.1:<port>/BeyondTrust/api/public/v3` */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly runAs: string;
  readonly calls: RecordedCall[];
  readonly requests: FakeRequest[];
  /** Every session cookie value handed out. */
  readonly issuedCookies: string[];
  addAccount(account: { systemName: string; accountName: string; password: string }): FakeAccount;
  /** Open a request as another Password Safe user (it is not in our user's `GET Requests`). */
  openAsOtherUser(account: FakeAccount, user?: string): FakeRequest;
  /** The request runs out (as after its DurationMinutes). */
  expire(requestId: number): void;
  failNext(failure: InjectedFailure): void;
  /** Sessions signed in and not signed out. */
  openSessions(): number;
  signIns(): number;
  signOuts(): number;
  /** Requests still open (active), of any user. */
  openRequests(): FakeRequest[];
  close(): Promise<void>;
}

const BASE_PATH = '/BeyondTrust/api/public/v3';
/** What a route handler returns once it has written its answer. */
type Answered = 'answered';
const COOKIE_NAME = 'ASP.NET_SessionId';

export async function startFakePasswordSafe(options: {
  readonly apiKey: string;
  readonly runAs: string;
}): Promise<FakePasswordSafe> {
  const accounts: FakeAccount[] = [];
  const requests: FakeRequest[] = [];
  const calls: RecordedCall[] = [];
  const issuedCookies: string[] = [];
  const sessions = new Map<string, string>(); // cookie value → user
  const failures: (InjectedFailure & { left: number })[] = [];
  const sockets = new Set<Socket>();
  let signIns = 0;
  let signOuts = 0;
  let nextSystemId = 10;
  let nextAccountId = 100;
  let nextRequestId = 1000;

  const json = (
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string | string[]> = {},
  ): Answered => {
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
    res.end(JSON.stringify(body));
    return 'answered';
  };
  // Password Safe's errors are JSON strings such as "4031 - …"; the texts here are the fake's.
  const text = (res: ServerResponse, status: number, message: string): Answered => json(res, status, message);
  const noContent = (res: ServerResponse): Answered => {
    res.writeHead(204);
    res.end();
    return 'answered';
  };

  const accountJson = (a: FakeAccount) => ({
    PlatformID: 79,
    SystemId: a.systemId,
    SystemName: a.systemName,
    DomainName: null,
    AccountId: a.accountId,
    AccountName: a.accountName,
    InstanceName: '',
    UserPrincipalName: null,
    ApplicationID: null,
    ApplicationDisplayName: null,
    DefaultReleaseDuration: 120,
    MaximumReleaseDuration: 525600,
    LastChangeDate: '2026-11-01T00:00:00',
    NextChangeDate: null,
    IsChanging: false,
    ChangeState: 0,
    IsISAAccess: false,
    PreferredNodeID: '00000000-0000-0000-0000-000000000000',
  });

  const requestJson = (r: FakeRequest) => {
    const a = accounts.find((x) => x.accountId === r.accountId);
    return {
      RequestID: r.requestId,
      SystemID: r.systemId,
      SystemName: a?.systemName ?? '',
      AccountID: r.accountId,
      AccountName: a?.accountName ?? '',
      DomainName: null,
      AliasID: null,
      ApplicationID: null,
      RequestReleaseDate: '2026-11-29T00:00:00',
      ApprovedDate: '2026-11-29T00:00:00',
      ExpiresDate: '2026-11-29T01:00:00',
      Status: r.status === 'active' ? 'Active' : r.status === 'checked_in' ? 'Released' : 'Expired',
      AccessType: r.accessType,
    };
  };

  const sameName = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();

  const cookieOf = (req: IncomingMessage): string | undefined => {
    for (const part of (req.headers.cookie ?? '').split(';')) {
      const [name, ...value] = part.trim().split('=');
      if (name === COOKIE_NAME) return value.join('=');
    }
    return undefined;
  };

  const handle = (req: IncomingMessage, res: ServerResponse, call: RecordedCall): Answered => {
    const { method, route, query } = call;

    if (method === 'POST' && route === 'Auth/SignAppin') {
      const match = /^PS-Auth key=([^;]*);\s*runas=([^;]*);/.exec(call.authorization ?? '');
      if (match === null || match[1] !== options.apiKey || match[2] !== options.runAs) {
        return text(res, 401, 'User not authenticated');
      }
      const cookie = randomBytes(12).toString('hex');
      sessions.set(cookie, options.runAs);
      issuedCookies.push(cookie);
      signIns++;
      return json(
        res,
        200,
        { UserId: 7, SID: null, EmailAddress: null, UserName: options.runAs, Name: options.runAs },
        { 'Set-Cookie': [`${COOKIE_NAME}=${cookie}; path=/; secure; HttpOnly; SameSite=Lax`] },
      );
    }

    const cookie = cookieOf(req);
    const user = cookie === undefined ? undefined : sessions.get(cookie);
    if (cookie === undefined || user === undefined) return text(res, 401, 'User not authenticated');

    if (method === 'POST' && route === 'Auth/Signout') {
      sessions.delete(cookie);
      signOuts++;
      return json(res, 200, null);
    }

    if (method === 'GET' && route.toLowerCase() === 'managedaccounts') {
      const { systemName, accountName } = query;
      const matches = accounts.filter(
        (a) =>
          (systemName === undefined || sameName(a.systemName, systemName)) &&
          (accountName === undefined || sameName(a.accountName, accountName)),
      );
      if (systemName !== undefined && accountName !== undefined) {
        const [one] = matches;
        return one === undefined
          ? text(res, 404, 'Managed account not found')
          : json(res, 200, accountJson(one));
      }
      return json(res, 200, matches.map(accountJson));
    }

    if (method === 'POST' && route === 'Requests') {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(call.body) as Record<string, unknown>;
      } catch {
        return text(res, 400, 'Invalid request body');
      }
      const { SystemID, AccountID, DurationMinutes, Reason, AccessType } = body;
      if (
        typeof SystemID !== 'number' ||
        typeof AccountID !== 'number' ||
        typeof DurationMinutes !== 'number' ||
        DurationMinutes < 1 ||
        DurationMinutes > 525600 ||
        !['View', 'RDP', 'SSH', 'App'].includes(String(AccessType))
      ) {
        return text(res, 400, 'Invalid request body');
      }
      const account = accounts.find((a) => a.systemId === SystemID && a.accountId === AccountID);
      if (account === undefined) return text(res, 404, 'Managed account not found');
      if (requests.some((r) => r.accountId === AccountID && r.status === 'active')) {
        return text(res, 409, 'Conflicting request exists');
      }
      const request: FakeRequest = {
        requestId: nextRequestId++,
        user,
        systemId: SystemID,
        accountId: AccountID,
        durationMinutes: DurationMinutes,
        reason: typeof Reason === 'string' ? Reason : '',
        accessType: String(AccessType),
        status: 'active',
        credentialReads: 0,
      };
      requests.push(request);
      return json(res, 201, request.requestId);
    }

    if (method === 'GET' && route === 'Requests') {
      const status = (query.status ?? 'all').toLowerCase();
      const mine = requests.filter(
        (r) => r.user === user && (status === 'all' || (status === 'active' && r.status === 'active')),
      );
      // Nothing is ever pending here: every request is approved at once.
      return json(res, 200, status === 'pending' ? [] : mine.map(requestJson));
    }

    const credentials = /^Credentials\/(\d+)$/.exec(route);
    if (method === 'GET' && credentials !== null) {
      const request = requests.find((r) => r.requestId === Number(credentials[1]) && r.user === user);
      if (request === undefined) return text(res, 404, 'Request not found');
      if (request.status !== 'active') return text(res, 403, 'Request is not active');
      const account = accounts.find((a) => a.accountId === request.accountId);
      request.credentialReads++;
      return json(res, 200, account?.password ?? '');
    }

    const checkin = /^Requests\/(\d+)\/Checkin$/.exec(route);
    if (method === 'PUT' && checkin !== null) {
      const request = requests.find((r) => r.requestId === Number(checkin[1]) && r.user === user);
      if (request === undefined) return text(res, 404, 'Request not found');
      if (request.status !== 'active') return text(res, 403, 'Request is not active');
      let reason: unknown;
      try {
        reason = (JSON.parse(call.body || '{}') as { Reason?: unknown }).Reason;
      } catch {
        return text(res, 400, 'Invalid request body');
      }
      request.status = 'checked_in';
      request.checkinReason = typeof reason === 'string' ? reason : '';
      return noContent(res);
    }

    return text(res, 400, `unsupported by fake: ${method} ${route}`);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const route = url.pathname.startsWith(`${BASE_PATH}/`) ? url.pathname.slice(BASE_PATH.length + 1) : '';
      const call: RecordedCall = {
        method: req.method ?? 'GET',
        route,
        query: Object.fromEntries(url.searchParams),
        authorization: req.headers.authorization,
        cookie: req.headers.cookie,
        body: Buffer.concat(chunks).toString('utf8'),
        status: 0,
      };
      calls.push(call);
      if (route === '') {
        call.status = 404;
        return text(res, 404, 'Not found');
      }
      const failure = failures.find(
        (f) => f.left > 0 && f.route.test(route) && (f.method === undefined || f.method === call.method),
      );
      if (failure !== undefined) {
        failure.left--;
        if (failure.answer === 'drop') {
          req.socket.destroy();
          return;
        }
        if (failure.answer === 'hang') return;
        const { status, body } = failure.answer;
        call.status = status;
        res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
        res.end(typeof body === 'function' ? body(call) : (body ?? '"Injected failure"'));
        return;
      }
      handle(req, res, call);
      call.status = res.statusCode;
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}${BASE_PATH}`,
    apiKey: options.apiKey,
    runAs: options.runAs,
    calls,
    requests,
    issuedCookies,
    addAccount({ systemName, accountName, password }) {
      const system = accounts.find((a) => sameName(a.systemName, systemName));
      const account: FakeAccount = {
        systemId: system?.systemId ?? nextSystemId++,
        systemName,
        accountId: nextAccountId++,
        accountName,
        password,
      };
      accounts.push(account);
      return account;
    },
    openAsOtherUser(account, user = 'someone-else') {
      const request: FakeRequest = {
        requestId: nextRequestId++,
        user,
        systemId: account.systemId,
        accountId: account.accountId,
        durationMinutes: 60,
        reason: 'held by another user',
        accessType: 'View',
        status: 'active',
        credentialReads: 0,
      };
      requests.push(request);
      return request;
    },
    expire(requestId) {
      const request = requests.find((r) => r.requestId === requestId);
      if (request !== undefined) request.status = 'expired';
    },
    failNext(failure) {
      failures.push({ ...failure, left: failure.times ?? 1 });
    },
    openSessions: () => sessions.size,
    signIns: () => signIns,
    signOuts: () => signOuts,
    openRequests: () => requests.filter((r) => r.status === 'active'),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
