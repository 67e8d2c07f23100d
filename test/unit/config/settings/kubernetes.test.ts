import { describe, expect, it } from 'vitest';
import { kubernetesSettings } from '../../../../shared/config/settings/kubernetes.ts';
import { parseArea } from './area.ts';

describe('Kubernetes settings', () => {
  it('default the namespace and service account', () => {
    expect(parseArea(kubernetesSettings, {}).value).toEqual({
      kubernetes_namespace: 'remote-worker',
      kubernetes_service_account: 'remote-worker-task',
    });
  });

  it('refuse names the API server would refuse', () => {
    const parsed = parseArea(kubernetesSettings, {
      kubernetes_namespace: 'Remote_Worker',
      kubernetes_pull_secrets: 'ok,Not_OK',
    });
    expect(parsed.problems).toEqual(['kubernetes_namespace', 'kubernetes_pull_secrets.1']);
  });
});
