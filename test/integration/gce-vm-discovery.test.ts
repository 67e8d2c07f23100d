import { InstancesClient } from '@google-cloud/compute/build/src/v1/instances_client.js';
import { OAuth2Client } from 'google-auth-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GceVmDiscovery } from '../../shared/adapters/gce/vm-discovery.ts';
import { discoveredRow } from '../../shared/domain/discovery.ts';
import { type FakeGce, startFakeGce } from '../support/fake-gce.ts';

/**
 * The real @google-cloud/compute InstancesClient (REST transport, a real
 * google-auth-library OAuth2Client) against a loopback fake of the Compute
 * Engine v1 instances API (test/support/fake-gce.ts lists where it differs
 * from Google). Pages of two, so every answer below took several requests.
 */
describe('GceVmDiscovery against a loopback Compute Engine', () => {
  let fake: FakeGce;
  let client: InstancesClient;

  const zoneUrl = (zone: string) => `https://www.googleapis.com/compute/v1/projects/acme/zones/${zone}`;
  const instance = (name: string, zone: string, over: Record<string, unknown> = {}) => ({
    id: String(1_000_000 + name.length),
    name,
    zone: zoneUrl(zone),
    status: 'RUNNING',
    networkInterfaces: [
      { networkIP: '10.128.0.7', accessConfigs: [{ name: 'External NAT', natIP: '34.1.2.3' }] },
    ],
    disks: [
      {
        boot: true,
        licenses: [
          'https://www.googleapis.com/compute/v1/projects/debian-cloud/global/licenses/debian-12-bookworm',
        ],
      },
    ],
    labels: { team: 'web' },
    ...over,
  });

  beforeAll(async () => {
    fake = await startFakeGce({ pageSize: 2 });
    fake.seed('acme', 'europe-west1-b', instance('web-1', 'europe-west1-b'));
    fake.seed('acme', 'europe-west1-b', instance('web-2', 'europe-west1-b', { status: 'TERMINATED' }));
    fake.seed(
      'acme',
      'us-central1-a',
      instance('win-1', 'us-central1-a', {
        disks: [{ boot: true, guestOsFeatures: [{ type: 'WINDOWS' }] }],
        networkInterfaces: [{ networkIP: '10.0.0.9' }],
      }),
    );
    const auth = new OAuth2Client();
    auth.setCredentials({ access_token: fake.token, expiry_date: Date.now() + 3_600_000 });
    client = new InstancesClient({
      apiEndpoint: fake.host,
      port: fake.port,
      protocol: 'http',
      fallback: true,
      authClient: auth,
    });
  });
  afterAll(async () => {
    await client?.close();
    await fake?.stop();
  });

  it('lists every zone of the project through aggregatedList, page after page', async () => {
    const vms = await new GceVmDiscovery({ project: 'acme', client }).discover();

    expect(vms.map((v) => v.id).sort()).toEqual([
      'gcp-europe-west1-b-web-1',
      'gcp-europe-west1-b-web-2',
      'gcp-us-central1-a-win-1',
    ]);
    const byName = Object.fromEntries(vms.map((v) => [v.name, v]));
    expect(byName['web-1']).toMatchObject({
      cloud: 'gcp',
      location: 'europe-west1-b',
      state: 'running',
      privateAddress: '10.128.0.7',
      publicAddress: '34.1.2.3',
      os: 'linux',
      labels: { team: 'web' },
    });
    expect(byName['win-1']).toMatchObject({ os: 'windows', privateAddress: '10.0.0.9' });
    expect(byName['win-1']?.publicAddress).toBeUndefined();
    expect(discoveredRow(byName['web-2'] as NonNullable<(typeof byName)['web-2']>).untargetableReason).toBe(
      'The VM is terminated, not running: start it in gcp and refresh discovery to target it',
    );
    expect(fake.requests.filter((r) => r.path.endsWith('/aggregated/instances')).length).toBeGreaterThan(1);
  });

  it('lists only the zones it is given', async () => {
    const vms = await new GceVmDiscovery({ project: 'acme', zones: ['us-central1-a'], client }).discover();

    expect(vms.map((v) => v.name)).toEqual(['win-1']);
  });

  it('fails naming the project when Compute Engine refuses', async () => {
    fake.failNext(403);

    await expect(new GceVmDiscovery({ project: 'acme', client }).discover()).rejects.toThrow(
      /^GCE instances of acme could not be listed: /,
    );
  });
});
