import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalMode, startLocalMode } from '../../bin/local-mode/local-mode.ts';
import type { Executor } from '../../shared/ports/executor.ts';
import { type Api, client, REPO, waitFor } from '../e2e/harness.ts';

/** Runs against this address exit 2; every other run exits 0 at once. */
const FAILING_ADDRESS = '10.0.0.13';

const fakeExecutor: Executor = {
  name: 'process',
  async start(request, sink) {
    const failing = JSON.stringify(request.spec.inventory).includes(FAILING_ADDRESS);
    sink([{ stream: 'stdout', text: `fake play for ${request.runId}` }]);
    return {
      handle: `fake:${request.runId}`,
      done: Promise.resolve({ exitCode: failing ? 2 : 0 }),
      kill: async () => {},
    };
  },
  adopt: async (handle) => ({
    handle,
    done: Promise.resolve({ lost: 'fake executor' }),
    kill: async () => {},
  }),
  reapOrphans: async () => [],
};

const vm = (address: string, cloud = 'local') => ({
  kind: 'vm',
  cloud,
  name: address,
  address,
  connection: 'ssh',
});

describe('POST /batches, GET /batches/{id}, POST /batches/{id}/retry', () => {
  let local: LocalMode;
  let api: Api;

  /** Every run, all pages: a refused request must leave this unchanged. */
  const allRuns = async (): Promise<any[]> => {
    const runs: any[] = [];
    let cursor: string | undefined;
    do {
      const { body } = await api(
        'GET',
        `/runs?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      runs.push(...body.runs);
      cursor = body.nextCursor;
    } while (cursor);
    return runs;
  };
  const completed = (batchId: string) =>
    waitFor(`batch ${batchId} to complete`, async () => {
      const { body } = await api('GET', `/batches/${batchId}`);
      return body.complete ? body : undefined;
    });
  const submit = (targetIds: unknown, extra: Record<string, unknown> = {}) =>
    api('POST', '/batches', { kind: 'vm', targetIds, asset: 'hello/site.yml', ...extra });

  beforeAll(async () => {
    local = await startLocalMode({
      cwd: REPO,
      env: {
        PORT: '0',
        REMOTE_WORKER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rw-batches-')),
        REMOTE_WORKER_TOKEN: 'secret-token-for-tests',
        LOG_LEVEL: 'ERROR',
        PATH: process.env.PATH,
        // AWS VMs resolve to ECS, whose shared fields are not set: refused per target.
        ANSIBLE_RUNNER_AWS: 'ecs',
      },
      executor: fakeExecutor,
    });
    api = client(local.url, local.token);
    const rows: [string, unknown][] = [
      ['vm-1', vm('10.0.0.11')],
      ['vm-2', vm('10.0.0.12')],
      ['vm-bad', vm(FAILING_ADDRESS)],
      ['vm-aws', vm('10.1.0.5', 'aws')],
      ['desk-1', { kind: 'virtual_desktop', cloud: 'azure', name: 'Seat 1' }],
      ['pve-101', { kind: 'vm', cloud: 'local', name: 'pve 101', node: 'pve1', vmid: 101 }],
      [
        'db-oracle',
        {
          kind: 'database',
          cloud: 'aws',
          name: 'ora',
          engine: 'oracle',
          endpoint: { host: 'ora.internal' },
          source: 'provisioned',
        },
      ],
      ['k8s-1', { kind: 'cluster', cloud: 'local', name: 'k3s', provider: 'k3s' }],
    ];
    for (const [id, row] of rows) expect((await api('PUT', `/targets/${id}`, row)).status).toBe(201);
  });
  afterAll(() => local?.close({ drainMs: 0 }));

  const refusals: [string, unknown, Record<string, unknown>, number, string, string[]][] = [
    [
      'more than 50 targets',
      Array.from({ length: 51 }, (_, i) => `vm-${i}`),
      {},
      400,
      'validation-failed',
      [],
    ],
    ['no target', [], {}, 400, 'validation-failed', []],
    ['a repeated id', ['vm-1', 'vm-2', 'vm-1'], {}, 422, 'selection-refused', ['vm-1']],
    ['an unknown id', ['vm-1', 'ghost'], {}, 422, 'selection-refused', ['ghost']],
    ['mixed kinds', ['vm-1', 'k8s-1'], {}, 422, 'selection-refused', ['k8s-1']],
    [
      'targets that do not fit the run kind',
      ['vm-1', 'vm-2'],
      { kind: 'cluster_play' },
      422,
      'selection-refused',
      ['vm-1', 'vm-2'],
    ],
    ['a virtual desktop', ['vm-1', 'desk-1'], {}, 422, 'selection-refused', ['desk-1']],
    ['a VM known only by node + VMID', ['pve-101', 'vm-1'], {}, 422, 'selection-refused', ['pve-101']],
    [
      'a database whose engine has no runner',
      ['db-oracle'],
      { kind: 'database_play' },
      422,
      'selection-refused',
      ['db-oracle'],
    ],
    ['a portainer batch', ['vm-1'], { kind: 'portainer' }, 422, 'selection-refused', ['vm-1']],
    [
      'several problems at once',
      ['desk-1', 'ghost', 'vm-1', 'vm-1'],
      {},
      422,
      'selection-refused',
      ['desk-1', 'ghost', 'vm-1'],
    ],
    ['a missing asset', ['vm-1'], { asset: 'hello/none.yml' }, 422, 'asset-not-found', []],
    ['an asset outside the root', ['vm-1'], { asset: '../package.json' }, 400, 'asset-outside-root', []],
    ['an unknown field', ['vm-1'], { targetId: 'vm-1' }, 400, 'validation-failed', []],
  ];

  it.each(refusals)(
    'refuses %s as a whole, naming the offenders, and creates nothing',
    async (_name, targetIds, extra, status, type, offenders) => {
      const before = await allRuns();

      const res = await submit(targetIds, extra);

      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(res.body.type).toBe(`https://remote-worker.dev/problems/${type}`);
      if (offenders.length > 0) {
        expect(res.body.targets.map((t: { targetId: string }) => t.targetId)).toEqual(offenders);
        expect(res.body.targets.every((t: { reason: string }) => t.reason.length > 0)).toBe(true);
        expect(res.body.errors.every((e: { path: string }) => /^body\.targetIds\.\d+$/.test(e.path))).toBe(
          true,
        );
      }
      expect((await allRuns()).length).toBe(before.length);
    },
  );

  it('gives each untargetable row its own reason', async () => {
    const res = await submit(['desk-1', 'pve-101']);

    expect(res.body.targets).toEqual([
      { targetId: 'desk-1', reason: expect.stringMatching(/virtual desktop is a seat/) },
      { targetId: 'pve-101', reason: expect.stringMatching(/node \+ VMID/) },
    ]);
  });

  it('runs a mixed-cloud batch: the AWS target is refused (ECS not configured) while the others run', async () => {
    const res = await submit(['vm-1', 'vm-aws', 'vm-2'], { extraVars: { greeting: 'fleet' } });

    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/batches/${res.body.batchId}`);
    expect(res.body.runs.map((r: any) => [r.targetId, r.state, r.batchId])).toEqual([
      ['vm-1', 'queued', res.body.batchId],
      ['vm-2', 'queued', res.body.batchId],
    ]);
    expect(res.body.failed).toEqual([
      {
        targetId: 'vm-aws',
        runId: expect.any(String),
        reason:
          'Ansible ECS runner is not configured: set ansible_ecs_subnet_id, ansible_ecs_execution_role_arn',
      },
    ]);
    const listed = await api('GET', `/runs?batchId=${res.body.batchId}`);
    expect(listed.body.runs).toHaveLength(3);

    const rollup = await completed(res.body.batchId);

    expect(rollup).toMatchObject({
      batchId: res.body.batchId,
      kind: 'vm',
      asset: 'hello/site.yml',
      total: 3,
      complete: true,
    });
    expect(rollup.counts).toMatchObject({ succeeded: 2, refused: 1, failed: 0, queued: 0 });
    expect(rollup.failed).toEqual([
      {
        runId: res.body.failed[0].runId,
        targetId: 'vm-aws',
        state: 'refused',
        reason: res.body.failed[0].reason,
      },
    ]);
  });

  it('answers 200 when every target is refused, and the rollup is complete at once', async () => {
    const res = await submit(['vm-aws']);

    expect(res.status).toBe(200);
    expect(res.body.runs).toEqual([]);
    const rollup = await api('GET', `/batches/${res.body.batchId}`);
    expect(rollup.body).toMatchObject({ total: 1, complete: true, counts: { refused: 1 } });
  });

  it('rolls up a failed play and retries only the targets that did not succeed, as a new batch', async () => {
    const first = await submit(['vm-1', 'vm-bad', 'vm-aws'], {
      extraVars: { greeting: 'again' },
      timeoutSeconds: 300,
    });
    const rollup = await completed(first.body.batchId);
    expect(rollup.counts).toMatchObject({ succeeded: 1, failed: 1, refused: 1 });
    expect(rollup.failed.map((f: any) => [f.targetId, f.state])).toEqual([
      ['vm-bad', 'failed'],
      ['vm-aws', 'refused'],
    ]);

    const retry = await api('POST', `/batches/${first.body.batchId}/retry`);

    expect(retry.status).toBe(202);
    expect(retry.body.batchId).not.toBe(first.body.batchId);
    expect(retry.body.retryOf).toBe(first.body.batchId);
    expect(retry.body.runs.map((r: any) => r.targetId)).toEqual(['vm-bad']);
    expect(retry.body.runs[0]).toMatchObject({
      extraVars: { greeting: 'again' },
      timeoutSeconds: 300,
      asset: 'hello/site.yml',
      retryOfBatch: first.body.batchId,
    });
    expect(retry.body.failed.map((f: any) => f.targetId)).toEqual(['vm-aws']);
    const second = await completed(retry.body.batchId);
    expect(second).toMatchObject({
      retryOf: first.body.batchId,
      total: 2,
      counts: { failed: 1, refused: 1 },
    });
  });

  it('has nothing to retry in a batch that succeeded', async () => {
    const res = await submit(['vm-1']);
    await completed(res.body.batchId);

    const retry = await api('POST', `/batches/${res.body.batchId}/retry`);

    expect(retry.status).toBe(409);
    expect(retry.body.type).toBe('https://remote-worker.dev/problems/nothing-to-retry');
  });

  it('answers 404 for a batch that does not exist', async () => {
    expect((await api('GET', '/batches/01ARZ3NDEKTSV4RRFFQ69G5FAV')).status).toBe(404);
    expect((await api('POST', '/batches/01ARZ3NDEKTSV4RRFFQ69G5FAV/retry')).status).toBe(404);
  });

  it('shows the start-latency record on each run of a batch', async () => {
    const res = await submit(['vm-2']);
    await completed(res.body.batchId);

    const run = await api('GET', `/runs/${res.body.runs[0].id}`);
    const listed = await api('GET', `/runs?batchId=${res.body.batchId}`);

    expect(run.body.timings).toMatchObject({
      queuedAt: run.body.createdAt,
      claimedAt: expect.any(String),
      launchedAt: expect.any(String),
      endedAt: expect.any(String),
      queueWaitMs: expect.any(Number),
      launchLatencyMs: expect.any(Number),
      runTimeMs: expect.any(Number),
    });
    expect(listed.body.runs[0].timings).toEqual(run.body.timings);
  });

  it.each([
    ['POST', '/batches'],
    ['GET', '/batches/x'],
    ['POST', '/batches/x/retry'],
  ])('answers 401 to %s %s without the token', async (method, path) => {
    expect((await fetch(local.url + path, { method })).status).toBe(401);
  });
});
