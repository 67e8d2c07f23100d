import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LogPages } from '../../../../shared/adapters/kubernetes/log-pages.ts';
import { newRun, type Run } from '../../../../shared/domain/run.ts';
import { systemClock } from '../../../../shared/ports/clock.ts';
import { type KubePeers, startKubePeers } from '../../../support/kube-peers.ts';

describe('LogPages', () => {
  let peers: KubePeers;
  let pages: LogPages;
  const runOf = (id: string): Run =>
    newRun(
      {
        id,
        kind: 'vm',
        targetId: 'vm-1',
        asset: 'hello/site.yml',
        extraVars: {},
        secrets: [],
        requestedBy: 'alice',
        timeoutSeconds: 600,
      },
      new Date().toISOString(),
    );

  beforeAll(async () => {
    peers = await startKubePeers();
    pages = new LogPages({ api: peers.api, archiver: peers.archiver, clock: systemClock, pageLines: 2 });
  });
  afterAll(async () => {
    await peers?.close();
  });

  it('pages the live pod log, then goes on in the archive at the same line once the pod is gone', async () => {
    const run = runOf('run-pages');
    const h = { namespace: peers.namespace, pod: 'pages-a1', attempt: 1 };
    peers.seedPod(h.pod, run.id);
    peers.fake.start(h.pod);
    peers.fake.appendLog(h.pod, ['l1', 'l2', 'l3', 'l4']);

    const first = await pages.read(h, run);
    expect(first.lines.map((l) => [l.seq, l.text])).toEqual([
      [1, 'l1'],
      [2, 'l2'],
    ]);
    await peers.archiver.archivePod(run.id, h, { final: true });
    peers.fake.remove('pods', h.pod);
    const second = await pages.read(h, run, first.nextCursor);
    const third = await pages.read(h, run, second.nextCursor);

    expect(second.lines.map((l) => l.text)).toEqual(['l3', 'l4']);
    expect(third.lines).toEqual([]);
  });

  it('reads the whole archive from the start once the pod is gone, and nothing for a pod never archived', async () => {
    const run = runOf('run-pages-none');
    const h = { namespace: peers.namespace, pod: 'pages-none', attempt: 1 };

    const page = await pages.read(h, run);
    const again = await pages.read(h, run, page.nextCursor);

    expect(page.lines).toEqual([]);
    expect(again.lines).toEqual([]);
  });

  it('never returns more than its page size, whatever the caller asks for', async () => {
    const run = runOf('run-pages-limit');
    const h = { namespace: peers.namespace, pod: 'pages-limit', attempt: 1 };
    peers.seedPod(h.pod, run.id);
    peers.fake.start(h.pod);
    peers.fake.appendLog(h.pod, ['a', 'b', 'c']);

    expect((await pages.read(h, run, undefined, 1)).lines.map((l) => l.text)).toEqual(['a']);
    expect((await pages.read(h, run, undefined, 1000)).lines.map((l) => l.text)).toEqual(['a', 'b']);
  });
});
