import { createHash, createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TestTls } from './tls.ts';

/**
 * A loopback HTTPS fake of the little of the Kubernetes API that kubectl
 * needs to authenticate and list pods, written from the public API shapes:
 *
 * - `GET /version` (the kubectl dispatcher on this machine asks it first)
 * - discovery: `GET /api` (APIVersions), `GET /apis` (an empty APIGroupList),
 *   `GET /api/v1` (an APIResourceList with `pods`) — always the legacy
 *   documents, never the aggregated `apidiscovery.k8s.io` form kubectl asks
 *   for first (it falls back, as it does against an older server)
 * - `GET /api/v1/namespaces/{ns}/pods[/{name}]` from a fixed list of pods
 *
 * Every request needs `Authorization: Bearer <token>` that `authenticate`
 * accepts; otherwise it answers 401 with a `Status`, as the API server does.
 * Every request is recorded (with the bearer token) before it is answered.
 * Anything else answers 404 NotFound.
 *
 * `verifyEksToken` plays the part of the EKS authenticator and STS: an
 * independent SigV4 check (node:crypto, from the AWS signing spec) of the
 * presigned GetCallerIdentity URL inside an EKS token.
 */

export interface KubeRequest {
  readonly method: string;
  /** Path and query as sent. */
  readonly url: string;
  /** The bearer token, or undefined when the request had none. */
  readonly token: string | undefined;
  readonly status: number;
}

export interface FakeKubeDiscovery {
  /** `https://127.0.0.1:<port>`, for a kubeconfig's `server`. */
  readonly server: string;
  /** The CA certificate as `certificate-authority-data` (base64 of the PEM). */
  readonly caData: string;
  readonly requests: KubeRequest[];
  /** Replace the rule that decides which bearer tokens get in. */
  authenticate(rule: (token: string) => boolean): void;
  close(): Promise<void>;
}

export interface FakeKubeDiscoveryOptions {
  readonly tls: TestTls;
  /** Pod names in every namespace (default `runner-1`). */
  readonly pods?: readonly string[];
}

type Json = Record<string, unknown>;

const status = (code: number, reason: string, message: string): Json => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message,
  reason,
  code,
});

const pod = (namespace: string, name: string): Json => ({
  kind: 'Pod',
  apiVersion: 'v1',
  metadata: { name, namespace, uid: `uid-${namespace}-${name}`, resourceVersion: '1' },
  spec: { containers: [{ name: 'runner', image: 'dtzar/helm-kubectl' }] },
  status: { phase: 'Running' },
});

/**
 * Start the fake on 127.0.0.1 (a free port). Refuses every token until
 * `authenticate` is given a rule.
 *
 * @example
 * const api = await startFakeKubeDiscovery({ tls: testTls() });
 * api.authenticate((token) => token === 'expected');
 */
export async function startFakeKubeDiscovery(options: FakeKubeDiscoveryOptions): Promise<FakeKubeDiscovery> {
  const pods = options.pods ?? ['runner-1'];
  let rule: (token: string) => boolean = () => false;
  const requests: KubeRequest[] = [];

  const answer = (path: string): { code: number; body: Json } => {
    if (path === '/version') {
      return {
        code: 200,
        body: {
          major: '1',
          minor: '32',
          gitVersion: 'v1.32.0',
          gitCommit: 'fake',
          gitTreeState: 'clean',
          buildDate: '2025-01-01T00:00:00Z',
          goVersion: 'go1.23.0',
          compiler: 'gc',
          platform: 'linux/amd64',
        },
      };
    }
    if (path === '/api') {
      return {
        code: 200,
        body: {
          kind: 'APIVersions',
          versions: ['v1'],
          serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }],
        },
      };
    }
    if (path === '/apis') return { code: 200, body: { kind: 'APIGroupList', apiVersion: 'v1', groups: [] } };
    if (path === '/api/v1') {
      return {
        code: 200,
        body: {
          kind: 'APIResourceList',
          groupVersion: 'v1',
          resources: [
            {
              name: 'pods',
              singularName: 'pod',
              namespaced: true,
              kind: 'Pod',
              verbs: ['get', 'list'],
              shortNames: ['po'],
              categories: ['all'],
            },
          ],
        },
      };
    }
    const match = /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+))?$/.exec(path);
    if (match !== null) {
      const namespace = decodeURIComponent(match[1]!);
      const name = match[2] === undefined ? undefined : decodeURIComponent(match[2]);
      if (name === undefined) {
        return {
          code: 200,
          body: {
            kind: 'PodList',
            apiVersion: 'v1',
            metadata: { resourceVersion: '1' },
            items: pods.map((p) => pod(namespace, p)),
          },
        };
      }
      if (pods.includes(name)) return { code: 200, body: pod(namespace, name) };
      return { code: 404, body: status(404, 'NotFound', `pods "${name}" not found`) };
    }
    return { code: 404, body: status(404, 'NotFound', 'the server could not find the requested resource') };
  };

  const server: Server = createServer({ key: options.tls.key, cert: options.tls.cert }, (req, res) => {
    const url = req.url ?? '/';
    const auth = req.headers.authorization;
    const token = auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined;
    const reply =
      token !== undefined && rule(token)
        ? answer(new URL(url, 'https://fake').pathname)
        : { code: 401, body: status(401, 'Unauthorized', 'Unauthorized') };
    requests.push({ method: req.method ?? 'GET', url, token, status: reply.code });
    res.writeHead(reply.code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(reply.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    server: `https://127.0.0.1:${port}`,
    caData: Buffer.from(options.tls.ca).toString('base64'),
    requests,
    authenticate(next) {
      rule = next;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

export interface EksTokenCheck {
  /** The cluster the authenticator serves: it sends this as `x-k8s-aws-id` when it calls STS. */
  readonly clusterName: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** The authenticator's clock. */
  readonly nowMs: number;
}

const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');
const hmac = (key: string | Buffer, text: string): Buffer =>
  createHmac('sha256', key).update(text, 'utf8').digest();
const rfc3986 = (value: string): string =>
  encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * Check an EKS token the way the cluster would: the `k8s-aws-v1.` prefix, a
 * base64url presigned URL to the regional STS endpoint for GetCallerIdentity
 * (API version 2011-06-15), `X-Amz-Expires=60`, `x-k8s-aws-id` among the
 * signed headers, a date no more than 15 minutes old, and — what STS itself
 * checks — a SigV4 signature that matches when recomputed with this cluster
 * name as the header value. Returns the reason it fails, or undefined.
 *
 * @example
 * expect(verifyEksToken(token, { clusterName: 'prod', region: 'eu-west-1', ... })).toBeUndefined();
 */
export function verifyEksToken(token: string, check: EksTokenCheck): string | undefined {
  const prefix = 'k8s-aws-v1.';
  if (!token.startsWith(prefix)) return 'no k8s-aws-v1. prefix';
  const encoded = token.slice(prefix.length);
  if (!/^[A-Za-z0-9_-]+$/.test(encoded)) return 'not unpadded base64url';
  let url: URL;
  try {
    url = new URL(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    return 'not a URL';
  }
  const host = `sts.${check.region}.amazonaws.com`;
  if (url.protocol !== 'https:' || url.host !== host || url.pathname !== '/') return `not https://${host}/`;
  const params = url.searchParams;
  const one = (name: string): string | undefined => {
    const values = params.getAll(name);
    return values.length === 1 ? values[0] : undefined;
  };
  if (one('Action') !== 'GetCallerIdentity') return 'Action is not GetCallerIdentity';
  if (one('Version') !== '2011-06-15') return 'Version is not 2011-06-15';
  if (one('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') return 'not AWS4-HMAC-SHA256';
  if (one('X-Amz-Expires') !== '60') return 'X-Amz-Expires is not 60';
  const signedHeaders = one('X-Amz-SignedHeaders') ?? '';
  const headerNames = signedHeaders.split(';');
  if (!headerNames.includes('x-k8s-aws-id')) return 'x-k8s-aws-id is not signed';
  if (!headerNames.includes('host')) return 'host is not signed';
  const known: Record<string, string> = { host, 'x-k8s-aws-id': check.clusterName };
  if (headerNames.some((h) => known[h] === undefined)) return 'an unknown header is signed';

  const amzDate = one('X-Amz-Date') ?? '';
  const dateMatch = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (dateMatch === null) return 'no X-Amz-Date';
  const [, y, mo, d, h, mi, s] = dateMatch;
  const signedAt = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}Z`);
  if (check.nowMs - signedAt > 15 * 60_000 || signedAt - check.nowMs > 5 * 60_000) return 'expired';
  const day = amzDate.slice(0, 8);
  const scope = `${day}/${check.region}/sts/aws4_request`;
  if (one('X-Amz-Credential') !== `${check.accessKeyId}/${scope}`) return 'wrong credential scope';

  const canonicalQuery = [...params.entries()]
    .filter(([key]) => key !== 'X-Amz-Signature')
    .map(([key, value]) => [rfc3986(key), rfc3986(value)] as const)
    .sort(([a, av], [b, bv]) => (a === b ? (av < bv ? -1 : 1) : a < b ? -1 : 1))
    .map(([key, value]) => `${key}=${value}`)
    .join('&');
  const sortedHeaders = [...headerNames].sort();
  const canonicalRequest = [
    'GET',
    '/',
    canonicalQuery,
    sortedHeaders.map((name) => `${name}:${known[name]}\n`).join(''),
    sortedHeaders.join(';'),
    sha256Hex(''),
  ].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  const key = ['sts', 'aws4_request'].reduce(
    (k, part) => hmac(k, part),
    hmac(hmac(`AWS4${check.secretAccessKey}`, day), check.region),
  );
  const expected = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  return one('X-Amz-Signature') === expected ? undefined : 'signature does not match';
}
