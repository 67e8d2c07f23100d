import { describe, expect, it } from 'vitest';
import { cloudRunSettings } from '../../../../shared/config/settings/cloud-run.ts';
import { parseArea } from './area.ts';

describe('Cloud Run settings', () => {
  it('take a VPC connector by name or full resource name', () => {
    for (const connector of ['rw-conn', 'projects/p/locations/europe-west1/connectors/rw-conn']) {
      expect(parseArea(cloudRunSettings, { gcp_ansible_vpc_connector: connector }).problems).toEqual([]);
    }
    expect(parseArea(cloudRunSettings, { gcp_ansible_vpc_connector: 'RW_CONN' }).problems).toEqual([
      'gcp_ansible_vpc_connector',
    ]);
  });
});
