import { ComputeManagementClient } from '@azure/arm-compute';
import { NetworkManagementClient } from '@azure/arm-network';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AzureVmDiscovery } from '../../shared/adapters/azure-compute/vm-discovery.ts';
import { discoveredRow } from '../../shared/domain/discovery.ts';
import { type FakeArmVms, startFakeArmVms } from '../support/fake-arm-vms.ts';

/**
 * The real @azure/arm-compute and @azure/arm-network clients against a
 * loopback fake of the ARM listings (test/support/fake-arm-vms.ts lists
 * where it differs from Azure), pages of two.
 */
describe('AzureVmDiscovery against a loopback Resource Manager', () => {
  let fake: FakeArmVms;
  let discovery: (groups?: string[]) => AzureVmDiscovery;

  beforeAll(async () => {
    fake = await startFakeArmVms({ pageSize: 2 });
    const sub = `/subscriptions/${fake.subscriptionId}`;
    const rg = (g: string) => `${sub}/resourceGroups/${g}`;
    const vm = (group: string, name: string, extra: Record<string, unknown>) => ({
      id: `${rg(group)}/providers/Microsoft.Compute/virtualMachines/${name}`,
      name,
      type: 'Microsoft.Compute/virtualMachines',
      location: 'westeurope',
      tags: { env: 'prod' },
      properties: {
        networkProfile: {
          networkInterfaces: [
            {
              id: `${rg(group)}/providers/Microsoft.Network/networkInterfaces/${name}-nic`,
              properties: { primary: true },
            },
          ],
        },
        ...extra,
      },
    });
    const nic = (group: string, name: string, privateIp: string, publicIp?: string) => ({
      id: `${rg(group)}/providers/Microsoft.Network/networkInterfaces/${name}-nic`,
      name: `${name}-nic`,
      properties: {
        ipConfigurations: [
          {
            name: 'ipconfig1',
            properties: {
              primary: true,
              privateIPAddress: privateIp,
              ...(publicIp === undefined
                ? {}
                : {
                    publicIPAddress: {
                      id: `${rg(group)}/providers/Microsoft.Network/publicIPAddresses/${name}-ip`,
                    },
                  }),
            },
          },
        ],
      },
    });
    fake.addVm(vm('web-rg', 'web-1', { storageProfile: { osDisk: { osType: 'Linux' } } }), 'running');
    fake.addVm(vm('web-rg', 'web-2', { storageProfile: { osDisk: { osType: 'Linux' } } }), 'deallocated');
    fake.addVm(
      vm('win-rg', 'win-1', {
        osProfile: { computerName: 'win-1', windowsConfiguration: { provisionVMAgent: true } },
      }),
      'running',
    );
    fake.addNic(nic('web-rg', 'web-1', '10.2.0.4', 'yes'));
    fake.addNic(nic('web-rg', 'web-2', '10.2.0.5'));
    fake.addNic(nic('win-rg', 'win-1', '10.3.0.4'));
    fake.addPublicIp({
      id: `${rg('web-rg')}/providers/Microsoft.Network/publicIPAddresses/web-1-ip`,
      name: 'web-1-ip',
      properties: { ipAddress: '20.1.2.3' },
    });
    const credential = {
      getToken: async () => ({ token: fake.token, expiresOnTimestamp: Date.now() + 3_600_000 }),
    };
    const options = {
      endpoint: fake.endpoint,
      tlsOptions: { ca: fake.ca },
      retryOptions: { maxRetries: 0 },
    };
    const compute = new ComputeManagementClient(credential, fake.subscriptionId, options);
    const network = new NetworkManagementClient(credential, fake.subscriptionId, options);
    discovery = (groups) =>
      new AzureVmDiscovery({ compute, network, ...(groups ? { resourceGroups: groups } : {}) });
  });
  afterAll(async () => {
    await fake?.stop();
  });

  it('joins VMs, power states, NICs and public IPs across pages', async () => {
    const vms = await discovery().discover();

    const byName = Object.fromEntries(vms.map((v) => [v.name, v]));
    expect(vms.map((v) => v.id).sort()).toEqual([
      'azure-web-rg-web-1',
      'azure-web-rg-web-2',
      'azure-win-rg-win-1',
    ]);
    expect(byName['web-1']).toMatchObject({
      cloud: 'azure',
      state: 'running',
      location: 'westeurope',
      privateAddress: '10.2.0.4',
      publicAddress: '20.1.2.3',
      os: 'linux',
      labels: { env: 'prod' },
    });
    expect(byName['win-1']).toMatchObject({ os: 'windows', privateAddress: '10.3.0.4', state: 'running' });
    expect(discoveredRow(byName['web-2'] as NonNullable<(typeof byName)['web-2']>).untargetableReason).toBe(
      'The VM is deallocated, not running: start it in azure and refresh discovery to target it',
    );
    expect(fake.requests.some((r) => r.query.$skiptoken !== undefined)).toBe(true);
  });

  it('keeps only the resource groups it is given', async () => {
    const vms = await discovery(['WIN-RG']).discover();

    expect(vms.map((v) => v.name)).toEqual(['win-1']);
  });

  it('fails saying what could not be listed when ARM refuses', async () => {
    fake.failNext(403);

    await expect(discovery().discover()).rejects.toThrow(/^Azure virtual machines could not be listed: /);
  });
});
