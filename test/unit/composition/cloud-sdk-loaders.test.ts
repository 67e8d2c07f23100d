import { describe, expect, it } from 'vitest';
import { AciLauncher } from '../../../shared/adapters/aci/launcher.ts';
import { CloudRunLauncher } from '../../../shared/adapters/cloud-run/launcher.ts';
import { withCloudSdk } from '../../../shared/composition/launchers.ts';

describe('withCloudSdk', () => {
  it('loads the ACI launcher adapter with the Azure SDK', async () => {
    const load = withCloudSdk('aci', 'aci', ([sdk, , adapter]) => ({
      client: sdk.ContainerInstanceManagementClient,
      adapter,
    }));

    const { client, adapter } = await load();

    expect(typeof client).toBe('function');
    expect(adapter.AciLauncher).toBe(AciLauncher);
  });

  it('loads the Cloud Run launcher adapter with the Google SDK', async () => {
    const load = withCloudSdk('gcp', 'gcp', ([sdk, , adapter]) => ({ client: sdk.JobsClient, adapter }));

    const { client, adapter } = await load();

    expect(typeof client).toBe('function');
    expect(adapter.CloudRunLauncher).toBe(CloudRunLauncher);
  });
});
