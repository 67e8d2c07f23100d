import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../../shared/config/settings.ts';

describe('discovery settings', () => {
  it('reads the clouds, regions and zones as comma-separated lists', () => {
    const settings = loadSettings({
      env: {
        DISCOVERY_CLOUDS: 'aws, azure,gcp',
        DISCOVERY_AWS_REGIONS: 'eu-west-1,us-east-1',
        DISCOVERY_GCP_ZONES: 'europe-west1-b',
        DISCOVERY_REFRESH_SECONDS: '60',
      },
    });

    expect(settings).toMatchObject({
      discovery_clouds: ['aws', 'azure', 'gcp'],
      discovery_aws_regions: ['eu-west-1', 'us-east-1'],
      discovery_gcp_zones: ['europe-west1-b'],
      discovery_refresh_seconds: 60,
    });
  });

  it('refuses an unknown cloud and a malformed region, naming the keys', () => {
    expect(() => loadSettings({ env: { DISCOVERY_CLOUDS: 'oci' } })).toThrow(/discovery_clouds\.0/);
    expect(() => loadSettings({ env: { DISCOVERY_AWS_REGIONS: 'Ireland' } })).toThrow(
      /discovery_aws_regions\.0: must be a region such as eu-west-1/,
    );
  });
});
