import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { testTls } from './tls.ts';

/**
 * A loopback fake of the four Azure Resource Manager listings AzureVmDiscovery
 * reads, from the public REST reference:
 * - `GET /subscriptions/{s}/providers/Microsoft.Compute/virtualMachines` (and `?statusOnly=true`)
 * - `GET /subscriptions/{s}/providers/Microsoft.Network/networkInterfaces`
 * - `GET /subscriptions/{s}/providers/Microsoft.Network/publicIPAddresses`
 * Each answers `{ value, nextLink? }` with `pageSize` items per page (the
 * next page's URL carries `$skiptoken`). https with the test CA (bearer
 * auth refuses plain http), the bearer token checked, `api-version`
 * required. Differences from Azure: `statusOnly` answers only `id`, `name`
 * and `properties.instanceView.statuses`; no `$filter`/`$expand`; resource
 * ids are compared case-sensitively here, case-insensitively by Azure (the
 * adapter lower-cases them).
 */
export interface FakeArmVms {
  readonly endpoint: string;
  readonly ca: string;
  readonly token: string;
  readonly subscriptionId: string;
  readonly requests: { readonly path: string; readonly query: Readonly<Record<string, string>> }[];
  /** Azure's wire shapes: `{ id, name, location, tags, properties: {…} }`. */
  addVm(vm: Record<string, unknown>, powerState: string): void;
  addNic(nic: Record<string, unknown>): void;
  addPublicIp(ip: Record<string, unknown>): void;
  failNext(status: number): void;
  stop(): Promise<void>;
}

export async function startFakeArmVms(options: { readonly pageSize?: number } = {}): Promise<FakeArmVms> {
  const pageSize = options.pageSize ?? 2;
  const tls = testTls();
  const token = `fake-arm-${randomBytes(8).toString('hex')}`;
  const subscriptionId = '00000000-0000-4000-8000-0000000000aa';
  const vms: { vm: Record<string, unknown>; power: string }[] = [];
  const nics: Record<string, unknown>[] = [];
  const ips: Record<string, unknown>[] = [];
  const requests: FakeArmVms['requests'][number][] = [];
  const failures: number[] = [];
  let base = '';

  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://fake');
    const query = Object.fromEntries(url.searchParams);
    requests.push({ path: url.pathname, query });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const fail = (status: number, code: string, message: string) =>
      send(status, { error: { code, message } });
    if (req.headers.authorization !== `Bearer ${token}`)
      return fail(401, 'InvalidAuthenticationToken', 'bad token');
    if (query['api-version'] === undefined)
      return fail(400, 'MissingApiVersionParameter', 'api-version is required');
    const injected = failures.shift();
    if (injected !== undefined) return fail(injected, 'AuthorizationFailed', `injected ${injected}`);
    const prefix = `/subscriptions/${subscriptionId}/providers/`;
    let items: unknown[] | undefined;
    if (req.method === 'GET' && url.pathname === `${prefix}Microsoft.Compute/virtualMachines`) {
      items =
        query.statusOnly === 'true'
          ? vms.map(({ vm, power }) => ({
              id: vm.id,
              name: vm.name,
              properties: {
                instanceView: {
                  statuses: [
                    { code: 'ProvisioningState/succeeded', level: 'Info' },
                    { code: `PowerState/${power}`, level: 'Info' },
                  ],
                },
              },
            }))
          : vms.map(({ vm }) => vm);
    } else if (req.method === 'GET' && url.pathname === `${prefix}Microsoft.Network/networkInterfaces`) {
      items = nics;
    } else if (req.method === 'GET' && url.pathname === `${prefix}Microsoft.Network/publicIPAddresses`) {
      items = ips;
    }
    if (items === undefined) return fail(400, 'UnsupportedByFake', `${req.method} ${url.pathname}`);
    const start = Number(query.$skiptoken ?? '0');
    const next = start + pageSize;
    const nextUrl = new URL(url.pathname, base);
    for (const [k, v] of Object.entries(query)) if (k !== '$skiptoken') nextUrl.searchParams.set(k, v);
    nextUrl.searchParams.set('$skiptoken', String(next));
    return send(200, {
      value: items.slice(start, next),
      ...(next < items.length ? { nextLink: nextUrl.toString() } : {}),
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint: base,
    ca: tls.ca,
    token,
    subscriptionId,
    requests,
    addVm: (vm, power) => vms.push({ vm, power }),
    addNic: (nic) => nics.push(nic),
    addPublicIp: (ip) => ips.push(ip),
    failNext: (status) => failures.push(status),
    stop: () =>
      new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      }),
  };
}
