import { describe, expect, it } from 'vitest';
import {
  assetMountFor,
  CONTAINER_ASSET_ROOT,
  containerName,
  containerTarget,
} from '../../../shared/adapters/relay/docker-target.ts';
import { LaunchRejectedError } from '../../../shared/domain/errors.ts';
import type { TaskSpec } from '../../../shared/domain/task-spec.ts';
import type { ExecutionRequest } from '../../../shared/ports/executor.ts';

const spec = (asset: TaskSpec['asset']): TaskSpec => ({
  runId: 'Run_1',
  kind: 'vm',
  asset,
  assetType: 'playbook',
  inventory: { all: { hosts: {} } },
  extraVars: {},
  secretVars: [],
  timeoutSeconds: 60,
});

describe('containerName', () => {
  it('is the same for every attempt of a run, in the characters an engine accepts', () => {
    expect(containerName('Run_1/a b')).toBe('rw-run_1-a-b');
    expect(containerName('Run_1/a b')).toBe(containerName('Run_1/a b'));
  });
});

describe('assetMountFor', () => {
  it("mounts the asset's own directory, or the asset root the asset is inside", () => {
    expect(assetMountFor(spec({ kind: 'file', path: '/srv/plays/site.yml' }), undefined)).toEqual({
      host: '/srv/plays',
      container: CONTAINER_ASSET_ROOT,
    });
    expect(assetMountFor(spec({ kind: 'file', path: '/srv/assets/a/site.yml' }), '/srv/assets')).toEqual({
      host: '/srv/assets',
      container: '/ansible/assets',
    });
    expect(
      assetMountFor(spec({ kind: 'url', url: 'https://a.example/site.yml' }), '/srv/assets'),
    ).toBeUndefined();
  });

  it("refuses an asset outside the root and a path docker's -v cannot say", () => {
    expect(() => assetMountFor(spec({ kind: 'file', path: '/etc/site.yml' }), '/srv/assets')).toThrow(
      LaunchRejectedError,
    );
    expect(() => assetMountFor(spec({ kind: 'file', path: '/srv/a:b/site.yml' }), undefined)).toThrow(
      /a ':' in the path/,
    );
  });
});

describe('containerTarget', () => {
  it('labels the container with the run and the executor, and adds only the limits asked for', () => {
    const request: ExecutionRequest = {
      runId: 'run-1',
      image: 'localhost/ansible:1',
      spec: spec({ kind: 'file', path: '/srv/plays/site.yml' }),
      secretEnv: { RW_SECRET_0: 'never-here' },
      workDir: '/w',
    };
    const mount = { host: '/srv/plays', container: CONTAINER_ASSET_ROOT };

    const target = containerTarget('podman', 'relay-1', { memory: '2g' }, request, 'rw-run-1', mount);

    expect(target).toEqual({
      bin: 'podman',
      name: 'rw-run-1',
      image: 'localhost/ansible:1',
      runArgs: [
        '--label',
        'remote-worker.run-id=run-1',
        '--label',
        'remote-worker.managed=true',
        '--label',
        'remote-worker.executor=relay-1',
        '--network',
        'bridge',
        '--init',
        '--memory',
        '2g',
        '-v',
        '/srv/plays:/ansible/assets:ro',
      ],
      assetMount: mount,
    });
    expect(JSON.stringify(target)).not.toContain('never-here');
  });
});
