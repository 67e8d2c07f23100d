import { describe, expect, it } from 'vitest';
import { aciSettings } from '../../../../shared/config/settings/aci.ts';
import { parseArea } from './area.ts';

describe('ACI settings', () => {
  it('take a subnet resource id and refuse anything else', () => {
    const subnet =
      '/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/default';
    expect(parseArea(aciSettings, { ansible_aci_subnet_id: subnet }).problems).toEqual([]);
    expect(parseArea(aciSettings, { ansible_aci_subnet_id: 'default' }).problems).toEqual([
      'ansible_aci_subnet_id',
    ]);
  });
});
