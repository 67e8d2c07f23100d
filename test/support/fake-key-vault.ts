import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { testTls } from './tls.ts';

/**
 * A loopback fake of the one Key Vault data-plane read AzureKeyVaultSecretSource
 * makes, from the public REST reference (Get Secret):
 * `GET /secrets/{name}/{version?}?api-version=…` → `{ value, id, attributes }`.
 * https with the test CA. Authentication is Key Vault's challenge: a request
 * without a bearer token is answered 401 with
 * `WWW-Authenticate: Bearer authorization="https://login.microsoftonline.com/<tenant>", resource="https://vault.azure.net"`
 * (the SDK then asks its credential for `https://vault.azure.net/.default`
 * and retries); a wrong token is 401 too. An unknown secret is 404
 * `SecretNotFound`; a disabled one 403 `Forbidden`/`SecretDisabled`, as Key
 * Vault answers; anything else is 400, so a new call fails loudly.
 * Differences from Azure: the vault is 127.0.0.1, not `<name>.vault.azure.net`,
 * so the client must set `disableChallengeResourceVerification` (the SDK checks
 * the challenge's resource is a parent domain of the vault's); no RBAC or
 * access policies (the token reads everything; Azure answers 403 without
 * "Key Vault Secrets User"); no soft-delete, tags or content types; names are
 * compared case-sensitively here, case-insensitively by Azure.
 */
export interface FakeKeyVault {
  readonly vaultUrl: string;
  readonly ca: string;
  readonly token: string;
  readonly tenantId: string;
  readonly requests: { readonly method: string; readonly path: string; readonly authorized: boolean }[];
  /** Set a secret's current version. */
  setSecret(name: string, value: string, options?: { enabled?: boolean }): void;
  /** The next authorized requests answer this status with a Key Vault error body. */
  failNext(status: number): void;
  stop(): Promise<void>;
}

export async function startFakeKeyVault(): Promise<FakeKeyVault> {
  const tls = testTls();
  const token = `fake-kv-${randomBytes(8).toString('hex')}`;
  const tenantId = '00000000-0000-4000-8000-0000000000bb';
  const secrets = new Map<string, { value: string; version: string; enabled: boolean }>();
  const requests: FakeKeyVault['requests'][number][] = [];
  const failures: number[] = [];
  let base = '';

  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://fake');
    const authorized = req.headers.authorization === `Bearer ${token}`;
    requests.push({ method: req.method ?? '', path: url.pathname, authorized });
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const fail = (status: number, code: string, message: string, inner?: string) =>
      send(status, { error: { code, message, ...(inner ? { innererror: { code: inner } } : {}) } });
    if (!authorized) {
      return send(
        401,
        { error: { code: 'Unauthorized', message: 'AKV10000: Request is missing a Bearer or PoP token.' } },
        {
          'www-authenticate': `Bearer authorization="https://login.microsoftonline.com/${tenantId}", resource="https://vault.azure.net"`,
        },
      );
    }
    if (url.searchParams.get('api-version') === null)
      return fail(400, 'BadParameter', 'The api-version query parameter is required');
    const injected = failures.shift();
    if (injected !== undefined) return fail(injected, 'Injected', `injected ${injected}`);
    const get = /^\/secrets\/([^/]+)(?:\/([^/]*))?\/?$/.exec(url.pathname);
    if (get !== null && req.method === 'GET') {
      const name = decodeURIComponent(get[1] ?? '');
      const secret = secrets.get(name);
      if (secret === undefined)
        return fail(
          404,
          'SecretNotFound',
          `A secret with (name/id) ${name} was not found in this key vault.`,
        );
      if (!secret.enabled)
        return fail(403, 'Forbidden', `Operation get is not allowed on a disabled secret.`, 'SecretDisabled');
      return send(200, {
        value: secret.value,
        id: `${base}/secrets/${name}/${secret.version}`,
        attributes: {
          enabled: true,
          created: 1_764_547_200,
          updated: 1_764_547_200,
          recoveryLevel: 'Recoverable',
        },
      });
    }
    return fail(400, 'BadParameter', `unsupportedByFake: ${req.method} ${url.pathname}`);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    vaultUrl: base,
    ca: tls.ca,
    token,
    tenantId,
    requests,
    setSecret(name, value, options = {}) {
      secrets.set(name, {
        value,
        version: randomBytes(16).toString('hex'),
        enabled: options.enabled ?? true,
      });
    },
    failNext(status) {
      failures.push(status);
    },
    stop: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}
