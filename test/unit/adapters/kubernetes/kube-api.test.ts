import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../../../shared/adapters/kubernetes/config.ts';
import { KubeApi } from '../../../../shared/adapters/kubernetes/kube-api.ts';
import { START } from '../../../../shared/adapters/kubernetes/pod-log.ts';
import { LauncherUnavailableError } from '../../../../shared/domain/errors.ts';
import { type FakeKubeApi, startFakeKubeApi } from '../../../support/fake-kube-api.ts';

/** The real @kubernetes/client-node against the loopback fake (its differences: test/integration/kubernetes-launcher.test.ts). */
describe('KubeApi against a fake Kubernetes API', () => {
  const NAMESPACE = 'remote-worker';
  let fake: FakeKubeApi;
  let dir: string;
  let api: KubeApi;

  const pod = (name: string) => ({
    metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'remote-worker' } },
    spec: { containers: [{ name: 'runner', image: 'x' }] },
    status: { phase: 'Pending' as const },
  });

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE });
    dir = mkdtempSync(join(tmpdir(), 'rw-kube-api-'));
    const path = join(dir, 'kubeconfig');
    writeFileSync(path, fake.kubeconfig(), { mode: 0o600 });
    api = new KubeApi({
      kubeConfig: loadKubeConfig({ kind: 'file', path }),
      retry: { attempts: 3, baseMs: 1 },
    });
  });

  afterAll(async () => {
    await fake?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('reads a pod, and answers undefined for one that is not there', async () => {
    fake.seed('pods', pod('kube-api-read'));

    expect((await api.readPod(NAMESPACE, 'kube-api-read'))?.metadata?.name).toBe('kube-api-read');
    expect(await api.readPod(NAMESPACE, 'kube-api-none')).toBeUndefined();
  });

  it('deletes each named object, taking one already gone as success, with the grace it is given', async () => {
    fake.seed('pods', pod('kube-api-del-1'));
    const mark = fake.requests.length;

    await api.deleteEach('pod', NAMESPACE, ['kube-api-del-1', 'kube-api-del-gone'], 7);

    const deletes = fake.requests.slice(mark).filter((r) => r.method === 'DELETE');
    expect(deletes.map((r) => [r.path.split('/').at(-1), r.status])).toEqual([
      ['kube-api-del-1', 200],
      ['kube-api-del-gone', 404],
    ]);
    expect(deletes[0]?.query.gracePeriodSeconds).toBe('7');
    expect(fake.names('pods')).not.toContain('kube-api-del-1');
  });

  it('retries a 5xx and gives up with LauncherUnavailableError when it persists', async () => {
    fake.fail({ method: 'GET', path: /\/pods\/kube-api-flaky$/, status: 503, times: 3 });
    const mark = fake.requests.length;

    await expect(api.readPod(NAMESPACE, 'kube-api-flaky')).rejects.toThrow(LauncherUnavailableError);
    expect(fake.requests.slice(mark)).toHaveLength(3);
  });

  it('reads a log as lines after a position: gone for no pod, not-started before the container runs', async () => {
    fake.seed('pods', pod('kube-api-log'));
    expect(await api.readLog({ namespace: NAMESPACE, pod: 'kube-api-none' }, START, { final: false })).toBe(
      'gone',
    );
    expect(await api.readLog({ namespace: NAMESPACE, pod: 'kube-api-log' }, START, { final: false })).toBe(
      'not-started',
    );

    fake.start('kube-api-log');
    fake.appendLog('kube-api-log', ['one', 'two']);
    fake.appendLog('kube-api-log', ['half'], { open: true });
    const read = await api.readLog({ namespace: NAMESPACE, pod: 'kube-api-log' }, START, { final: false });
    const final = await api.readLog({ namespace: NAMESPACE, pod: 'kube-api-log' }, START, { final: true });

    expect(read !== 'gone' && read !== 'not-started' && read.lines.map((l) => l.text)).toEqual([
      'one',
      'two',
    ]);
    expect(final !== 'gone' && final !== 'not-started' && final.lines.map((l) => l.text)).toEqual([
      'one',
      'two',
      'half',
    ]);
  });

  it('deletes a run’s Secrets and ConfigMaps by label', async () => {
    const labels = { 'remote-worker/run-id': 'label-run' };
    fake.seed('configmaps', { metadata: { name: 'kube-api-cm', labels }, data: {} });
    fake.seed('secrets', { metadata: { name: 'kube-api-secret', labels }, data: {} });

    await api.deleteLabelled('configmaps', NAMESPACE, 'remote-worker/run-id=label-run');
    await api.deleteLabelled('secrets', NAMESPACE, 'remote-worker/run-id=label-run');

    expect(fake.names('configmaps')).not.toContain('kube-api-cm');
    expect(fake.names('secrets')).not.toContain('kube-api-secret');
  });
});
