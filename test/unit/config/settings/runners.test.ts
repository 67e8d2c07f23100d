import { describe, expect, it } from 'vitest';
import { runnerSettings } from '../../../../shared/config/settings/runners.ts';
import { parseArea } from './area.ts';

describe('runner settings', () => {
  it('default to the local runner and the seeds’ images', () => {
    expect(parseArea(runnerSettings, {}).value).toEqual({
      ansible_runner: 'local',
      k8s_runner: 'local',
      ansible_local_image: 'chrweav/ansible-winrm:latest',
      ansible_cloud_image: 'chrweav/ansible-cloud',
      k8s_runner_image: 'dtzar/helm-kubectl',
    });
  });

  it('refuses a runner that does not exist', () => {
    expect(parseArea(runnerSettings, { ansible_runner_aws: 'lambda' }).problems).toEqual([
      'ansible_runner_aws',
    ]);
  });
});
