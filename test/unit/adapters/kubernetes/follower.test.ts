import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PodFollowers } from '../../../../shared/adapters/kubernetes/follower.ts';
import { markerText } from '../../../../shared/adapters/kubernetes/log-archive.ts';
import { type KubePeers, startKubePeers } from '../../../support/kube-peers.ts';

describe('PodFollowers', () => {
  let peers: KubePeers;
  let followers: PodFollowers;
  const texts = async (runId: string) =>
    (await peers.archive.read(runId, { limit: 100 })).lines.map((l) => l.text);
  const waitFor = async (condition: () => boolean | Promise<boolean>, what: string) => {
    const until = Date.now() + 5000;
    while (!(await condition())) {
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  beforeAll(async () => {
    peers = await startKubePeers();
    followers = new PodFollowers({ api: peers.api, archiver: peers.archiver, pollIntervalSeconds: 0.05 });
  });
  afterAll(async () => {
    await peers?.close();
  });

  it('waits for the container, streams its lines into the archive and ends with the pod', async () => {
    const h = { namespace: peers.namespace, pod: 'follow-all', attempt: 1 };
    peers.seedPod(h.pod, 'run-follow');

    const following = followers.follow('run-follow', h);
    expect(followers.has(h)).toBe(true);
    expect(followers.follow('run-follow', h)).toBe(following);
    peers.fake.start(h.pod);
    await waitFor(() => peers.fake.followers(h.pod) > 0, 'a follow stream');
    peers.fake.appendLog(h.pod, ['first', 'second']);
    await waitFor(async () => (await texts('run-follow')).includes('second'), 'the streamed lines');
    peers.fake.appendLog(h.pod, ['last'], { open: true });
    peers.fake.finish(h.pod, { exitCode: 0 });

    expect(await following).toEqual({ archived: 3 });
    expect(followers.has(h)).toBe(false);
    expect(await texts('run-follow')).toEqual([markerText(h.namespace, h.pod, 1), 'first', 'second', 'last']);
  });

  it('stop ends every follower of the run and waits for it', async () => {
    const h = { namespace: peers.namespace, pod: 'follow-stop', attempt: 1 };
    peers.seedPod(h.pod, 'run-follow-stop');
    peers.fake.start(h.pod);

    const following = followers.follow('run-follow-stop', h);
    await waitFor(() => peers.fake.followers(h.pod) > 0, 'a follow stream');
    await followers.stop('run-follow-stop');

    expect(followers.has(h)).toBe(false);
    await expect(following).resolves.toEqual({ archived: 0 });
  });

  it('ends at once for a pod that is not there', async () => {
    const h = { namespace: peers.namespace, pod: 'follow-none', attempt: 1 };

    await expect(followers.follow('run-follow-none', h)).resolves.toEqual({ archived: 0 });
  });
});
