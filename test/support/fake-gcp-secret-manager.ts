import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback fake of the one Secret Manager v1 read GcpSecretManagerSecretSource
 * makes, from the public REST reference (projects.secrets.versions.access):
 * `GET /v1/projects/{p}/secrets/{s}/versions/{v}:access` →
 * `{ name, payload: { data: <base64>, dataCrc32c } }`, the version `latest`
 * being the highest-numbered enabled one. Every request needs the bearer token
 * the test's OAuth2Client carries (401 otherwise); an unknown secret, or one
 * with no enabled version, is 404 `NOT_FOUND`; anything else is 400, so a new
 * call fails loudly. Differences from Google: no IAM (a known token may read
 * every secret; Google answers 403 PERMISSION_DENIED without
 * roles/secretmanager.secretAccessor), no locations/regional secrets, no
 * `dataCrc32c` check, versions are only ever enabled or disabled (no destroy),
 * and the answer's `name` keeps the project id where Google puts the project
 * number. Seen through the real client (gax 5.0.8, google-auth-library 10.5):
 * an error answer surfaces as gaxios' GaxiosError (HTTP `status`, the JSON
 * body as message), not as a GoogleError with a gRPC code.
 */
export interface FakeGcpSecretManager {
  readonly host: string;
  readonly port: number;
  readonly token: string;
  readonly requests: { readonly method: string; readonly path: string }[];
  /** Add a version to the secret (created when new); returns its version number. */
  addVersion(
    project: string,
    secret: string,
    data: string | Uint8Array,
    options?: { enabled?: boolean },
  ): number;
  /** The next requests answer this status with a Google error body. */
  failNext(status: number, times?: number): void;
  stop(): Promise<void>;
}

const STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

export async function startFakeGcpSecretManager(): Promise<FakeGcpSecretManager> {
  const token = `ya29.fake-${randomBytes(8).toString('hex')}`;
  const secrets = new Map<string, { data: Buffer; enabled: boolean }[]>();
  const requests: FakeGcpSecretManager['requests'][number][] = [];
  let failures: number[] = [];

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, status: number, message: string) =>
    send(res, status, { error: { code: status, message, status: STATUS[status] ?? 'UNKNOWN' } });

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = decodeURIComponent(url.pathname);
    requests.push({ method: req.method ?? '', path });
    if (req.headers.authorization !== `Bearer ${token}`)
      return error(res, 401, 'Request had invalid authentication credentials');
    const failure = failures.shift();
    if (failure !== undefined) return error(res, failure, `injected ${failure}`);
    const access = /^\/v1\/projects\/([^/]+)\/secrets\/([^/]+)\/versions\/([^/:]+):access$/.exec(path);
    if (access !== null && req.method === 'GET') {
      const [, project, secret, version] = access as unknown as [string, string, string, string];
      const versions = secrets.get(`${project}/${secret}`);
      if (versions === undefined)
        return error(
          res,
          404,
          `Secret [projects/${project}/secrets/${secret}] not found or has no versions.`,
        );
      const number = version === 'latest' ? versions.findLastIndex((v) => v.enabled) + 1 : Number(version);
      const found = versions[number - 1];
      if (found === undefined || !found.enabled)
        return error(
          res,
          404,
          `Secret Version [projects/${project}/secrets/${secret}/versions/${version}] not found or is disabled.`,
        );
      return send(res, 200, {
        name: `projects/${project}/secrets/${secret}/versions/${number}`,
        payload: { data: found.data.toString('base64') },
      });
    }
    return error(res, 400, `unsupportedByFake: ${req.method} ${path}`);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  const { port } = server.address() as AddressInfo;
  return {
    host: '127.0.0.1',
    port,
    token,
    requests,
    addVersion(project, secret, data, options = {}) {
      const key = `${project}/${secret}`;
      const versions = secrets.get(key) ?? [];
      versions.push({ data: Buffer.from(data), enabled: options.enabled ?? true });
      secrets.set(key, versions);
      return versions.length;
    },
    failNext(status, times = 1) {
      failures = [...failures, ...Array.from({ length: times }, () => status)];
    },
    stop: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}
