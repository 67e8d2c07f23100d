import { describe, expect, it } from 'vitest';
import { cloudRunOptionsFromSettings } from '../../../../shared/adapters/cloud-run/config.ts';
import { loadSettings } from '../../../../shared/config/settings.ts';
import { RunnerNotConfiguredError } from '../../../../shared/domain/errors.ts';

describe('cloudRunOptionsFromSettings', () => {
  it("refuses with the seeds' message when the project or a region is missing", () => {
    const refuse = (env: Record<string, string>) => () => cloudRunOptionsFromSettings(loadSettings({ env }));

    expect(refuse({ GCP_REGION: 'europe-west1' })).toThrow(RunnerNotConfiguredError);
    expect(refuse({ GCP_REGION: 'europe-west1' })).toThrow(
      /^Ansible Cloud Run runner is not configured: set gcp_project_id$/,
    );
    expect(refuse({ GCP_PROJECT_ID: 'p' })).toThrow(
      'Ansible Cloud Run runner is not configured: set gcp_region',
    );
    expect(refuse({})).toThrow('Ansible Cloud Run runner is not configured: set gcp_project_id, gcp_region');
    expect(() => cloudRunOptionsFromSettings({}, 'Kubernetes')).toThrow(
      'Kubernetes Cloud Run runner is not configured: set gcp_project_id, gcp_region',
    );
  });

  it('prefers the Cloud Run region over gcp_region and passes the VPC connector on', () => {
    expect(cloudRunOptionsFromSettings({ gcp_project_id: 'p', gcp_region: 'us-east1' })).toEqual({
      project: 'p',
      region: 'us-east1',
    });
    expect(
      cloudRunOptionsFromSettings({
        gcp_project_id: 'p',
        gcp_region: 'us-east1',
        gcp_ansible_cloud_run_region: 'europe-west4',
        gcp_ansible_vpc_connector: 'projects/p/locations/europe-west4/connectors/c',
      }),
    ).toEqual({
      project: 'p',
      region: 'europe-west4',
      vpcConnector: 'projects/p/locations/europe-west4/connectors/c',
    });
  });
});
