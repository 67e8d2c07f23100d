import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markerText } from '../../../../shared/adapters/kubernetes/log-archive.ts';
import { type KubePeers, startKubePeers } from '../../../support/kube-peers.ts';

describe('PodArchiver', () => {
  let peers: KubePeers;
  const texts = async (runId: string) =>
    (await peers.archive.read(runId, { limit: 100 })).lines.map((l) => l.text);

  beforeAll(async () => {
    peers = await startKubePeers();
  });
  afterAll(async () => {
    await peers?.close();
  });

  it('opens the archive with the pod marker once, then appends only what it lacks', async () => {
    const h = { namespace: peers.namespace, pod: 'archive-once', attempt: 1 };
    peers.seedPod(h.pod, 'run-archive-once');
    peers.fake.start(h.pod);
    peers.fake.appendLog(h.pod, ['one', 'two']);

    expect(await peers.archiver.archivePod('run-archive-once', h, { final: false })).toBe(2);
    peers.fake.appendLog(h.pod, ['three']);
    expect(await peers.archiver.archivePod('run-archive-once', h, { final: false })).toBe(1);
    expect(await peers.archiver.archivePod('run-archive-once', h, { final: true })).toBe(0);

    expect(await texts('run-archive-once')).toEqual([
      markerText(h.namespace, h.pod, 1),
      'one',
      'two',
      'three',
    ]);
  });

  it('writes no line twice when cancel, cleanup and a follower archive the same pod at once', async () => {
    const h = { namespace: peers.namespace, pod: 'archive-race', attempt: 1 };
    peers.seedPod(h.pod, 'run-archive-race');
    peers.fake.start(h.pod);
    peers.fake.appendLog(h.pod, ['a', 'b', 'c']);

    const counts = await Promise.all(
      [1, 2, 3].map(() => peers.archiver.archivePod('run-archive-race', h, { final: true })),
    );

    expect(counts.sort()).toEqual([0, 0, 3]);
    expect(await texts('run-archive-race')).toEqual([markerText(h.namespace, h.pod, 1), 'a', 'b', 'c']);
  });

  it('open reports how far the archive has got, without copying anything', async () => {
    const h = { namespace: peers.namespace, pod: 'archive-open', attempt: 2 };
    peers.seedPod(h.pod, 'run-archive-open', 2);
    peers.fake.start(h.pod);
    peers.fake.appendLog(h.pod, ['x', 'y']);

    const empty = await peers.archiver.open('run-archive-open', h);
    await peers.archiver.archivePod('run-archive-open', h, { final: false });
    const after = await peers.archiver.open('run-archive-open', h);

    expect(empty.n).toBe(0);
    expect(after.n).toBe(2);
    expect(await texts('run-archive-open')).toEqual([markerText(h.namespace, h.pod, 2), 'x', 'y']);
  });
});
