import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PodFollowers } from '../../../../shared/adapters/kubernetes/follower.ts';
import { configMapNameFor, secretNameFor } from '../../../../shared/adapters/kubernetes/handle.ts';
import { collectOrphans, groupByRun, removeRun } from '../../../../shared/adapters/kubernetes/run-cleanup.ts';
import { type KubePeers, startKubePeers } from '../../../support/kube-peers.ts';

const pod = (name: string, runId?: string): V1Pod => ({
  metadata: { name, ...(runId === undefined ? {} : { annotations: { 'remote-worker/run-id': runId } }) },
});
const configMap = (name: string, runId?: string): V1ConfigMap => ({
  metadata: { name, ...(runId === undefined ? {} : { annotations: { 'remote-worker/run-id': runId } }) },
});

describe('groupByRun', () => {
  it('groups pods and ConfigMaps by run, a ConfigMap standing for its pod, and names what has no run', () => {
    const { byRun, unidentified } = groupByRun(
      [pod('p1', 'r1'), pod('p2', 'r1'), pod('loose')],
      [configMap('p1-task', 'r1'), configMap('p9-task', 'r2'), configMap('stray', '')],
    );

    expect([...byRun.keys()]).toEqual(['r1', 'r2']);
    expect(byRun.get('r1')?.pods.map((p) => p.metadata?.name)).toEqual(['p1', 'p2']);
    expect([...(byRun.get('r1')?.names ?? [])]).toEqual(['p1', 'p2']);
    expect(byRun.get('r2')?.pods).toEqual([]);
    expect([...(byRun.get('r2')?.names ?? [])]).toEqual(['p9']);
    expect(unidentified).toEqual(['pod/loose', 'configmap/stray']);
  });
});

describe('removeRun and collectOrphans', () => {
  let peers: KubePeers;
  const deps = () => ({
    api: peers.api,
    archiver: peers.archiver,
    followers: new PodFollowers({ api: peers.api, archiver: peers.archiver, pollIntervalSeconds: 0.05 }),
    graceSeconds: 5,
  });
  const support = (name: string, runId: string) => {
    const labels = peers.fake.get('pods', name)?.metadata.labels ?? {};
    const metadata = { labels, annotations: { 'remote-worker/run-id': runId } };
    peers.fake.seed('secrets', { metadata: { name: secretNameFor(name), ...metadata }, data: {} });
    peers.fake.seed('configmaps', { metadata: { name: configMapNameFor(name), ...metadata }, data: {} });
  };

  beforeAll(async () => {
    peers = await startKubePeers();
  });
  afterAll(async () => {
    await peers?.close();
  });

  it('archives every attempt’s log, earliest first, then deletes Secrets, ConfigMaps and pods, pods last', async () => {
    for (const attempt of [2, 1]) {
      const name = `cleanup-a${attempt}`;
      peers.seedPod(name, 'run-cleanup', attempt);
      support(name, 'run-cleanup');
      peers.fake.start(name);
      peers.fake.appendLog(name, [`attempt ${attempt}`]);
    }
    const pods = await peers.api.listPods(peers.namespace, 'remote-worker/run-id=run-cleanup');
    const mark = peers.fake.requests.length;

    await removeRun(deps(), 'run-cleanup', peers.namespace, { pods, names: [] });

    const archived = (await peers.archive.read('run-cleanup', { limit: 10 })).lines.map((l) => l.text);
    expect(archived.filter((t) => !t.startsWith('k8s: '))).toEqual(['attempt 1', 'attempt 2']);
    const deletes = peers.fake.requests
      .slice(mark)
      .filter((r) => r.method === 'DELETE')
      .map((r) => r.path.split('/').slice(5).join('/'));
    expect(deletes.at(-1)).toMatch(/^pods\/cleanup-a/);
    expect(deletes.indexOf('secrets')).toBeLessThan(deletes.indexOf('configmaps'));
    expect(peers.fake.names('pods').filter((n) => n.startsWith('cleanup-'))).toEqual([]);
    expect(peers.fake.names('secrets').filter((n) => n.startsWith('cleanup-'))).toEqual([]);
    expect(peers.fake.names('configmaps').filter((n) => n.startsWith('cleanup-'))).toEqual([]);
  });

  it('collects the objects of runs that are not active, keeps the active ones', async () => {
    peers.seedPod('orphan-done', 'run-done');
    support('orphan-done', 'run-done');
    peers.seedPod('orphan-active', 'run-active');
    support('orphan-active', 'run-active');

    const report = await collectOrphans(deps(), peers.namespace, async (runId) => runId === 'run-active');

    expect(report).toEqual({ collected: ['run-done'], kept: ['run-active'], unidentified: [] });
    expect(peers.fake.names('pods')).toContain('orphan-active');
    expect(peers.fake.names('pods')).not.toContain('orphan-done');
    expect(peers.fake.names('configmaps')).not.toContain(configMapNameFor('orphan-done'));
  });
});
