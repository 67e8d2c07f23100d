import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { getBatch, retryBatch, submitBatch } from '../../../shared/app/batches.ts';
import { settleRun } from '../../../shared/app/run-updates.ts';
import {
  AssetNotFoundError,
  NotFoundError,
  NothingToRetryError,
  SelectionRefusedError,
} from '../../../shared/domain/errors.ts';
import { transition } from '../../../shared/domain/run.ts';
import { decodeRunMessage } from '../../../shared/domain/run-message.ts';
import { SubmitBatchBody } from '../../../shared/http/request-schemas.ts';
import { makeTestApp, type TestApp, vmTarget } from './harness.ts';

const body = (targetIds: string[], extra: Record<string, unknown> = {}): SubmitBatchBody =>
  SubmitBatchBody.parse({ kind: 'vm', targetIds, asset: 'hello/site.yml', ...extra });

describe('submitBatch', () => {
  let app: TestApp;
  const stored = async () => (await app.store.listRuns({ limit: 100 })).runs;

  beforeEach(async () => {
    app = makeTestApp({ env: { ANSIBLE_RUNNER_AWS: 'ecs' } });
    for (let i = 1; i <= 23; i++) await app.targets.putTarget(vmTarget(`vm-${i}`));
    await app.targets.putTarget(vmTarget('vm-aws', { cloud: 'aws' }));
  });
  afterEach(() => app.close());

  it('writes every run in one createRuns and enqueues them 10 per sendBatch', async () => {
    const createRuns = vi.spyOn(app.store, 'createRuns');
    const sendBatch = vi.spyOn(app.dispatchQueue, 'sendBatch');
    const ids = Array.from({ length: 23 }, (_, i) => `vm-${i + 1}`);

    const batch = await submitBatch(app.deps, body(ids, { extraVars: { greeting: 'hi' } }), 'alice');

    expect(createRuns).toHaveBeenCalledTimes(1);
    expect(sendBatch.mock.calls.map(([bodies]) => bodies.length)).toEqual([10, 10, 3]);
    const enqueued = sendBatch.mock.calls.flatMap(([bodies]) =>
      bodies.map((b) => decodeRunMessage(b)?.runId),
    );
    expect(enqueued).toEqual(batch.runs.map((r) => r.id));
    expect(batch.runs.map((r) => r.targetId)).toEqual(ids);
    expect(new Set(batch.runs.map((r) => r.batchId))).toEqual(new Set([batch.batchId]));
    expect(batch.runs.every((r) => r.extraVars.greeting === 'hi' && r.requestedBy === 'alice')).toBe(true);
    expect(batch.failed).toEqual([]);
  });

  it('records a runner refusal as a refused run of the batch and enqueues only the rest', async () => {
    const sendBatch = vi.spyOn(app.dispatchQueue, 'sendBatch');

    const batch = await submitBatch(app.deps, body(['vm-1', 'vm-aws']), 'alice');

    expect(batch.runs.map((r) => r.targetId)).toEqual(['vm-1']);
    expect(batch.failed).toEqual([
      {
        targetId: 'vm-aws',
        runId: expect.any(String),
        reason:
          'Ansible ECS runner is not configured: set ansible_ecs_subnet_id, ansible_ecs_execution_role_arn',
      },
    ]);
    expect(await app.store.getRun(batch.failed[0]?.runId ?? '')).toMatchObject({
      state: 'refused',
      batchId: batch.batchId,
    });
    expect(sendBatch.mock.calls.flat(2)).toHaveLength(1);
  });

  it('writes nothing when the selection is refused', async () => {
    const error = await submitBatch(app.deps, body(['vm-1', 'ghost', 'vm-1']), 'alice').catch(
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(SelectionRefusedError);
    expect((error as SelectionRefusedError).targets.map((t) => t.targetId)).toEqual(['ghost', 'vm-1']);
    expect((error as SelectionRefusedError).fields.map((f) => f.path)).toEqual([
      'body.targetIds.1',
      'body.targetIds.2',
    ]);
    expect(await stored()).toEqual([]);
  });

  it('writes nothing when the asset is missing', async () => {
    await expect(
      submitBatch(app.deps, body(['vm-1'], { asset: 'hello/none.yml' }), 'alice'),
    ).rejects.toBeInstanceOf(AssetNotFoundError);
    expect(await stored()).toEqual([]);
  });

  it('writes nothing and enqueues nothing when the atomic write fails', async () => {
    vi.spyOn(app.store, 'createRuns').mockRejectedValueOnce(new Error('disk full'));
    const sendBatch = vi.spyOn(app.dispatchQueue, 'sendBatch');

    await expect(submitBatch(app.deps, body(['vm-1', 'vm-2']), 'alice')).rejects.toThrow('disk full');
    expect(sendBatch).not.toHaveBeenCalled();
    expect(await stored()).toEqual([]);
  });

  it('answers with the batch when enqueueing fails: the runs are recorded for the reconciler', async () => {
    vi.spyOn(app.dispatchQueue, 'sendBatch').mockRejectedValue(new Error('queue down'));

    const batch = await submitBatch(app.deps, body(['vm-1', 'vm-2']), 'alice');

    expect((await stored()).map((r) => r.state)).toEqual(['queued', 'queued']);
    expect(batch.runs).toHaveLength(2);
  });
});

describe('getBatch and retryBatch', () => {
  let app: TestApp;

  beforeEach(async () => {
    app = makeTestApp({ env: { ANSIBLE_RUNNER_AWS: 'ecs' } });
    for (const id of ['vm-1', 'vm-2', 'vm-3']) await app.targets.putTarget(vmTarget(id));
    await app.targets.putTarget(vmTarget('vm-aws', { cloud: 'aws' }));
  });
  afterEach(() => app.close());

  const finish = (id: string, state: 'succeeded' | 'failed') =>
    settleRun(app.store, id, (r) => {
      const now = app.clock.now();
      const running = transition(
        transition(transition(r, 'dispatching', now), 'launched', now),
        'running',
        now,
      );
      return transition(running, state, now, state === 'failed' ? { reason: 'exit 2' } : {});
    });

  it('is not found for an id no run carries', async () => {
    await expect(getBatch(app.deps, 'nope')).rejects.toBeInstanceOf(NotFoundError);
    await expect(retryBatch(app.deps, 'nope', 'alice')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('reads every page of a batch', async () => {
    const batch = await submitBatch(app.deps, body(['vm-1', 'vm-2', 'vm-3']), 'alice');
    const original = app.store.listRuns.bind(app.store);
    const listRuns = vi
      .spyOn(app.store, 'listRuns')
      .mockImplementation((query) => original({ ...query, limit: 1 }));

    const rollup = await getBatch(app.deps, batch.batchId);

    expect(rollup.total).toBe(3);
    expect(listRuns.mock.calls.length).toBeGreaterThanOrEqual(3);
  });

  it('retries the failed and refused targets with the same request, as a new batch', async () => {
    const first = await submitBatch(
      app.deps,
      body(['vm-1', 'vm-2', 'vm-aws'], { extraVars: { greeting: 'again' }, timeoutSeconds: 99 }),
      'alice',
    );
    const [ok, bad] = first.runs;
    await finish(ok?.id ?? '', 'succeeded');
    await finish(bad?.id ?? '', 'failed');

    const retry = await retryBatch(app.deps, first.batchId, 'bob');

    expect(retry.retryOf).toBe(first.batchId);
    expect(retry.batchId).not.toBe(first.batchId);
    expect(retry.runs.map((r) => r.targetId)).toEqual(['vm-2']);
    expect(retry.failed.map((f) => f.targetId)).toEqual(['vm-aws']);
    expect(retry.runs[0]).toMatchObject({
      extraVars: { greeting: 'again' },
      timeoutSeconds: 99,
      requestedBy: 'bob',
      retryOfBatch: first.batchId,
    });
    expect(await getBatch(app.deps, retry.batchId)).toMatchObject({ total: 2, retryOf: first.batchId });
  });

  it('has nothing to retry when every run succeeded', async () => {
    const batch = await submitBatch(app.deps, body(['vm-1']), 'alice');
    await finish(batch.runs[0]?.id ?? '', 'succeeded');

    await expect(retryBatch(app.deps, batch.batchId, 'alice')).rejects.toBeInstanceOf(NothingToRetryError);
  });
});
