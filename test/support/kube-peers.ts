import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../shared/adapters/kubernetes/config.ts';
import { labelsFor, RUN_ID_ANNOTATION } from '../../shared/adapters/kubernetes/handle.ts';
import { KubeApi } from '../../shared/adapters/kubernetes/kube-api.ts';
import { PodArchiver } from '../../shared/adapters/kubernetes/pod-archive.ts';
import { openDatabase, type SqliteDatabase } from '../../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../../shared/adapters/sqlite/log-store.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { type FakeKubeApi, startFakeKubeApi } from './fake-kube-api.ts';

/**
 * The Kubernetes adapter's pieces wired to real peers, for the unit tests of
 * each module: the real client against the loopback fake API
 * (fake-kube-api.ts; where it differs from a cluster:
 * test/integration/kubernetes-launcher.test.ts) and a SQLite archive.
 */
export interface KubePeers {
  readonly namespace: string;
  readonly fake: FakeKubeApi;
  readonly kubeConfig: KubeConfig;
  readonly api: KubeApi;
  readonly archive: SqliteLogStore;
  readonly archiver: PodArchiver;
  /** A pod the fake holds, labelled and annotated as the launcher makes them. */
  seedPod(name: string, runId: string, attempt?: number): void;
  close(): Promise<void>;
}

export async function startKubePeers(): Promise<KubePeers> {
  const namespace = 'remote-worker';
  const fake = await startFakeKubeApi({ namespace });
  const dir = mkdtempSync(join(tmpdir(), 'rw-kube-peers-'));
  const path = join(dir, 'kubeconfig');
  writeFileSync(path, fake.kubeconfig(), { mode: 0o600 });
  const kubeConfig = loadKubeConfig({ kind: 'file', path });
  const api = new KubeApi({ kubeConfig, retry: { baseMs: 1 } });
  const db: SqliteDatabase = openDatabase(':memory:');
  const archive = new SqliteLogStore({ db });
  const archiver = new PodArchiver({ api, archive, clock: systemClock });
  return {
    namespace,
    fake,
    kubeConfig,
    api,
    archive,
    archiver,
    seedPod: (name, runId, attempt = 1) =>
      fake.seed('pods', {
        metadata: {
          name,
          labels: labelsFor({ runId, attempt }),
          annotations: { [RUN_ID_ANNOTATION]: runId },
        },
        spec: { containers: [{ name: 'runner', image: 'x' }] },
        status: { phase: 'Pending' },
      }),
    close: async () => {
      db.close();
      await fake.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
