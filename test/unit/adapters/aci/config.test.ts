import { describe, expect, it } from 'vitest';
import { aciOptionsFromSettings } from '../../../../shared/adapters/aci/config.ts';
import { AciNotConfiguredError } from '../../../../shared/adapters/aci/errors.ts';
import { loadSettings } from '../../../../shared/config/settings.ts';

const RG = 'rg-remote-worker';
const LOCATION = 'westeurope';
const ACR_SERVER = 'rwregistry.azurecr.io';
const SUBNET_A =
  '/subscriptions/00000000-0000-4000-8000-000000000001/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/vnet/subnets/aci-a';
const SUBNET_B =
  '/subscriptions/00000000-0000-4000-8000-000000000001/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/vnet/subnets/aci-b';

describe('aciOptionsFromSettings', () => {
  const settings = (env: Record<string, string>) => aciOptionsFromSettings(loadSettings({ env }));

  it('refuses a half-configured ACI with the seeds’ message, naming every missing key', () => {
    expect(() => settings({ AZURE_SUBSCRIPTION_ID: 'sub', AZURE_LOCATION: LOCATION })).toThrow(
      new AciNotConfiguredError(['azure_resource_group']),
    );
    expect(() => settings({ AZURE_SUBSCRIPTION_ID: 'sub', AZURE_LOCATION: LOCATION })).toThrow(
      /^Ansible ACI runner is not configured: set azure_resource_group$/,
    );
    expect(() => settings({ ANSIBLE_ACI_SUBNET_ID: SUBNET_A })).toThrow(
      'Ansible ACI runner is not configured: set azure_resource_group, azure_subscription_id, azure_location',
    );
    expect(() =>
      settings({
        AZURE_RESOURCE_GROUP: RG,
        AZURE_SUBSCRIPTION_ID: 'sub',
        AZURE_LOCATION: LOCATION,
        ANSIBLE_ACI_ACR_SERVER: ACR_SERVER,
      }),
    ).toThrow(
      'Ansible ACI runner is not configured: set ansible_aci_acr_username, ansible_aci_acr_password_secret',
    );
    try {
      settings({ AZURE_LOCATION: LOCATION });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(AciNotConfiguredError);
      expect((error as AciNotConfiguredError).code).toBe('runner_not_configured');
      expect((error as AciNotConfiguredError).missingKeys).toEqual([
        'azure_resource_group',
        'azure_subscription_id',
      ]);
    }
  });

  it('reads subnets as a comma-separated list and keeps the registry password as a secret name', () => {
    expect(settings({})).toBeUndefined();
    expect(
      settings({
        AZURE_RESOURCE_GROUP: RG,
        AZURE_SUBSCRIPTION_ID: 'sub',
        AZURE_LOCATION: LOCATION,
        ANSIBLE_ACI_SUBNET_ID: ` ${SUBNET_A} ,${SUBNET_B},`,
        ANSIBLE_ACI_ACR_SERVER: ACR_SERVER,
        ANSIBLE_ACI_ACR_USERNAME: 'puller',
        ANSIBLE_ACI_ACR_PASSWORD_SECRET: 'acr-pull-password',
      }),
    ).toEqual({
      subscriptionId: 'sub',
      resourceGroup: RG,
      location: LOCATION,
      subnetIds: [SUBNET_A, SUBNET_B],
      registry: { server: ACR_SERVER, username: 'puller', passwordSecret: 'acr-pull-password' },
    });
  });
});
