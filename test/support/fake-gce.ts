import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback fake of the two Compute Engine v1 reads GceVmDiscovery makes,
 * from the public REST reference (instances.aggregatedList, instances.list):
 * - `GET /compute/v1/projects/{p}/aggregated/instances` → `{ items: { "zones/<z>": { instances } }, nextPageToken? }`
 * - `GET /compute/v1/projects/{p}/zones/{z}/instances` → `{ items: [instances], nextPageToken? }`
 * Pages hold `pageSize` instances (the client's `maxResults` is ignored);
 * every request needs the bearer token the test's OAuth2Client carries (401
 * otherwise). Anything else is 400, so a new call fails loudly. Differences
 * from Google: no `warning` entries for empty zones, no filters, no
 * `returnPartialSuccess`, and `id` is a plain decimal string as Google sends it.
 */
export interface FakeGce {
  readonly host: string;
  readonly port: number;
  readonly token: string;
  readonly requests: { readonly path: string; readonly query: Readonly<Record<string, string>> }[];
  /** Instances per zone, as Google returns them (name, zone URL, status, networkInterfaces, disks …). */
  seed(project: string, zone: string, instance: Record<string, unknown>): void;
  /** The next requests answer this status with a Google error body. */
  failNext(status: number, times?: number): void;
  stop(): Promise<void>;
}

export async function startFakeGce(options: { readonly pageSize?: number } = {}): Promise<FakeGce> {
  const pageSize = options.pageSize ?? 2;
  const token = `ya29.fake-${randomBytes(8).toString('hex')}`;
  const zones = new Map<string, Map<string, Record<string, unknown>[]>>();
  const requests: FakeGce['requests'][number][] = [];
  let failures: number[] = [];

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, status: number, message: string) =>
    send(res, status, { error: { code: status, message, errors: [{ message, reason: 'fake' }] } });

  const page = <T>(all: readonly T[], query: Record<string, string>) => {
    const start = Number(query.pageToken ?? '0');
    const next = start + pageSize;
    return { slice: all.slice(start, next), nextPageToken: next < all.length ? String(next) : undefined };
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const query = Object.fromEntries(url.searchParams);
    requests.push({ path: url.pathname, query });
    if (req.headers.authorization !== `Bearer ${token}`)
      return error(res, 401, 'Request had invalid authentication credentials');
    const failure = failures.shift();
    if (failure !== undefined) return error(res, failure, `injected ${failure}`);
    const aggregated = /^\/compute\/v1\/projects\/([^/]+)\/aggregated\/instances$/.exec(url.pathname);
    if (aggregated !== null && req.method === 'GET') {
      const project = zones.get(aggregated[1] ?? '') ?? new Map<string, Record<string, unknown>[]>();
      const all = [...project.entries()].flatMap(([zone, list]) => list.map((i) => [zone, i] as const));
      const { slice, nextPageToken } = page(all, query);
      const items: Record<string, { instances: Record<string, unknown>[] }> = {};
      for (const [zone, instance] of slice) {
        items[`zones/${zone}`] ??= { instances: [] };
        items[`zones/${zone}`]?.instances.push(instance);
      }
      return send(res, 200, {
        kind: 'compute#instanceAggregatedList',
        items,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
    }
    const listed = /^\/compute\/v1\/projects\/([^/]+)\/zones\/([^/]+)\/instances$/.exec(url.pathname);
    if (listed !== null && req.method === 'GET') {
      const all = zones.get(listed[1] ?? '')?.get(listed[2] ?? '') ?? [];
      const { slice, nextPageToken } = page(all, query);
      return send(res, 200, {
        kind: 'compute#instanceList',
        items: slice,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
    }
    return error(res, 400, `unsupportedByFake: ${req.method} ${url.pathname}`);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  const { port } = server.address() as AddressInfo;
  return {
    host: '127.0.0.1',
    port,
    token,
    requests,
    seed(project, zone, instance) {
      const byZone = zones.get(project) ?? new Map<string, Record<string, unknown>[]>();
      byZone.set(zone, [...(byZone.get(zone) ?? []), instance]);
      zones.set(project, byZone);
    },
    failNext(status, times = 1) {
      failures = [...failures, ...Array.from({ length: times }, () => status)];
    },
    stop: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}
