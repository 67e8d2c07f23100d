import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubernetesLauncherOptions } from '../../../../shared/adapters/kubernetes/config.ts';
import {
  configMapNameFor,
  podNameFor,
  secretNameFor,
} from '../../../../shared/adapters/kubernetes/handle.ts';
import { launchPod } from '../../../../shared/adapters/kubernetes/pod-launch.ts';
import { LaunchRejectedError } from '../../../../shared/domain/errors.ts';
import { newRun, type Run, transition } from '../../../../shared/domain/run.ts';
import type { TaskSpec } from '../../../../shared/domain/task.ts';
import type { PreparedTask } from '../../../../shared/ports/launcher.ts';
import { type KubePeers, startKubePeers } from '../../../support/kube-peers.ts';

describe('launchPod', () => {
  let peers: KubePeers;
  let secretEnv: Record<string, string> = {};
  const options = (): KubernetesLauncherOptions => ({
    kubeConfig: peers.kubeConfig,
    namespace: peers.namespace,
    serviceAccountName: 'remote-worker-task',
    archive: peers.archive,
    prepare: async (): Promise<PreparedTask> =>
      ({ spec: { secretVars: [] } as unknown as TaskSpec, secretEnv, secretRefs: {} }) as PreparedTask,
  });
  const run = (id: string): Run => {
    const now = new Date().toISOString();
    const draft = newRun(
      { id, kind: 'vm', targetId: 't', asset: 'a.yml', requestedBy: 'alice', timeoutSeconds: 60 },
      now,
    );
    return transition(draft, 'dispatching', now, {
      patch: { attempt: 1, owner: 'dispatcher:test', runner: 'kubernetes', image: 'img' },
    });
  };

  beforeAll(async () => {
    peers = await startKubePeers();
  });
  afterAll(async () => {
    await peers?.close();
  });

  it('creates the pod, its Secret and ConfigMap, and adopts them on a second launch', async () => {
    secretEnv = { RW_SECRET_0: 'launch-canary' };
    const r = run('run-launch-pod');
    const pod = podNameFor({ runId: r.id, attempt: 1 });

    const handle = await launchPod(peers.api, options(), r, 'img');
    const mark = peers.fake.requests.length;
    const again = await launchPod(peers.api, options(), r, 'img');

    expect(handle).toBe(`kubernetes:${peers.namespace}/${pod}#a1`);
    expect(again).toBe(handle);
    expect(peers.fake.names('pods')).toContain(pod);
    expect(peers.fake.names('secrets')).toContain(secretNameFor(pod));
    expect(peers.fake.names('configmaps')).toContain(configMapNameFor(pod));
    expect(peers.fake.get('secrets', secretNameFor(pod))?.metadata.ownerReferences).toHaveLength(1);
    // The second launch met the pod (409) and created nothing new.
    expect(
      peers.fake.requests
        .slice(mark)
        .filter((q) => q.method === 'POST')
        .map((q) => q.status),
    ).toEqual([409, 409, 409]);
  });

  it('creates nothing for a pod whose log is archived: it ran and was cleaned up', async () => {
    secretEnv = {};
    const r = run('run-launch-archived');
    const pod = podNameFor({ runId: r.id, attempt: 1 });
    await peers.archiver.open(r.id, { namespace: peers.namespace, pod, attempt: 1 });

    await launchPod(peers.api, options(), r, 'img');

    expect(peers.fake.names('pods')).not.toContain(pod);
  });

  it('refuses an empty image and secret environment names that are not variable names', async () => {
    secretEnv = { 'not-a-name': 'x' };

    await expect(launchPod(peers.api, options(), run('run-launch-noimg'), ' ')).rejects.toThrow(
      'No runner image to start the Kubernetes pod with',
    );
    await expect(launchPod(peers.api, options(), run('run-launch-badenv'), 'img')).rejects.toThrow(
      LaunchRejectedError,
    );
    expect(peers.fake.names('pods')).not.toContain(podNameFor({ runId: 'run-launch-badenv', attempt: 1 }));
  });
});
