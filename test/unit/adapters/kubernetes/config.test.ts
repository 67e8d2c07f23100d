import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubernetesSettingsFrom, loadKubeConfig } from '../../../../shared/adapters/kubernetes/config.ts';
import { loadSettings } from '../../../../shared/config/settings.ts';
import { SettingsInvalidError } from '../../../../shared/domain/errors.ts';

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
contexts:
- name: ctx
  context:
    cluster: c
    user: u
current-context: ctx
users:
- name: u
  user:
    token: t
`;

describe('kubernetesSettingsFrom', () => {
  let dir: string;
  let kubeconfigPath: string;

  const settings = (env: Record<string, string> = {}) =>
    loadSettings({
      env: {
        KUBERNETES_KUBECONFIG: kubeconfigPath,
        KUBERNETES_PULL_SECRETS: 'registry-example',
        CLEANUP_GRACE_SECONDS: '25',
        ...env,
      },
    });

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rw-k8s-config-'));
    kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, KUBECONFIG, { mode: 0o600 });
  });

  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses with the seeds message when there is neither a kubeconfig nor an in-cluster service account', () => {
    const s = loadSettings({ env: {} });

    expect(() => kubernetesSettingsFrom(s, {})).toThrow(
      /^Kubernetes pod runner is not configured: set kubernetes_kubeconfig \(/,
    );
    expect(kubernetesSettingsFrom(s, { KUBERNETES_SERVICE_HOST: '10.96.0.1' })).toMatchObject({
      namespace: 'remote-worker',
      serviceAccountName: 'remote-worker-task',
      imagePullSecrets: [],
      pollIntervalSeconds: 3,
      cleanupGraceSeconds: 30,
      kubeconfig: { kind: 'in-cluster' },
    });
    expect(kubernetesSettingsFrom(settings(), {})).toMatchObject({
      imagePullSecrets: ['registry-example'],
      cleanupGraceSeconds: 25,
      kubeconfig: { kind: 'file', path: kubeconfigPath },
    });
  });

  it('never sees a bad Kubernetes name: loading the settings refuses each, naming its key', () => {
    let error: unknown;
    try {
      settings({
        KUBERNETES_NAMESPACE: 'Remote_Worker',
        KUBERNETES_SERVICE_ACCOUNT: 'Task SA',
        KUBERNETES_PULL_SECRETS: 'ok,Not OK',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SettingsInvalidError);
    expect((error as SettingsInvalidError).problems.map((p) => p.path)).toEqual([
      'kubernetes_namespace',
      'kubernetes_service_account',
      'kubernetes_pull_secrets.1',
    ]);
    expect((error as Error).message).toContain('Not OK is not a DNS-1123 subdomain name');
  });
});

describe('loadKubeConfig', () => {
  it('reads the current context of a kubeconfig file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rw-k8s-config-'));
    try {
      const path = join(dir, 'kubeconfig');
      writeFileSync(path, KUBECONFIG, { mode: 0o600 });

      const kubeConfig = loadKubeConfig({ kind: 'file', path });

      expect(kubeConfig.getCurrentContext()).toBe('ctx');
      expect(kubeConfig.getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
