import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { settleRun } from '../../../shared/app/run-updates.ts';
import { cancelRun, submitRun } from '../../../shared/app/runs.ts';
import {
  AssetNotFoundError,
  IdempotencyMismatchError,
  InvalidTransitionError,
  NotFoundError,
  RunnerRefusedError,
  ValidationError,
} from '../../../shared/domain/errors.ts';
import { transition } from '../../../shared/domain/run.ts';
import { decodeRunMessage } from '../../../shared/domain/run-message.ts';
import { SubmitRunBody } from '../../../shared/http/request-schemas.ts';
import { createQueuedRun, makeTestApp, markLaunched, type TestApp, vmTarget } from './harness.ts';

const vmBody = (overrides: Record<string, unknown> = {}): SubmitRunBody =>
  SubmitRunBody.parse({ kind: 'vm', targetId: 'vm-1', asset: 'hello/site.yml', ...overrides });

describe('submitRun', () => {
  let app: TestApp;

  const enqueued = async (): Promise<string[]> =>
    (await app.dispatchQueue.receive({ max: 10 })).map((m) => decodeRunMessage(m.body)?.runId ?? m.body);
  const storedRuns = async () => (await app.store.listRuns({ limit: 100 })).runs;

  beforeEach(async () => {
    app = makeTestApp();
    await app.targets.putTarget(vmTarget('vm-1'));
    await app.targets.putTarget({
      id: 'desk-1',
      kind: 'virtual_desktop',
      cloud: 'azure',
      name: 'desk-1',
      createdAt: app.clock.now(),
      updatedAt: app.clock.now(),
    });
  });
  afterEach(() => app.close());

  it('records a queued run with its runner and puts one message on the dispatch queue', async () => {
    const { run, created } = await submitRun(app.deps, vmBody({ extraVars: { greeting: 'hi' } }), 'alice');

    expect(created).toBe(true);
    expect(run).toMatchObject({
      id: 'run-0001',
      state: 'queued',
      runner: 'local',
      image: 'chrweav/ansible-winrm:latest',
      requestedBy: 'alice',
      timeoutSeconds: 3600,
      extraVars: { greeting: 'hi' },
    });
    expect(await app.store.getRun(run.id)).toEqual(run);
    expect(await enqueued()).toEqual([run.id]);
  });

  it('records a refused run with the reason and enqueues nothing', async () => {
    const ecsApp = makeTestApp({ env: { ANSIBLE_RUNNER_AWS: 'ecs' } });
    try {
      await ecsApp.targets.putTarget(vmTarget('vm-aws', { cloud: 'aws' }));

      const { run, created } = await submitRun(ecsApp.deps, vmBody({ targetId: 'vm-aws' }), 'alice');

      expect(created).toBe(true);
      expect(run).toMatchObject({
        state: 'refused',
        reason:
          'Ansible ECS runner is not configured: set ansible_ecs_subnet_id, ansible_ecs_execution_role_arn',
      });
      expect((await ecsApp.store.getRun(run.id))?.state).toBe('refused');
      expect(ecsApp.dispatchQueue.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    } finally {
      ecsApp.close();
    }
  });

  it('refuses an in-cloud runner for an asset that exists only on the local filesystem', async () => {
    const ecsApp = makeTestApp({
      launcherBackend: 'ecs',
      env: {
        ANSIBLE_RUNNER_AWS: 'ecs',
        ANSIBLE_ECS_SUBNET_ID: 'subnet-0abc',
        ANSIBLE_ECS_EXECUTION_ROLE_ARN: 'arn:aws:iam::123456789012:role/exec',
      },
    });
    try {
      await ecsApp.targets.putTarget(vmTarget('vm-aws', { cloud: 'aws' }));

      const { run } = await submitRun(ecsApp.deps, vmBody({ targetId: 'vm-aws' }), 'alice');

      expect(run.state).toBe('refused');
      expect(run.reason).toBe(
        'The ECS runner cannot read assets on the local filesystem storage backend: they exist only on this host. Configure an object store to copy them to (asset_s3_bucket, azure_storage_account_url with azure_storage_container, or gcs_bucket), or set storage_backend to s3, azure_blob or gcs',
      );
      expect(ecsApp.dispatchQueue.depth().visible).toBe(0);
    } finally {
      ecsApp.close();
    }
  });

  it('returns the first run for a replayed idempotency key and sends no second message', async () => {
    const first = await submitRun(app.deps, vmBody(), 'alice', { idempotencyKey: 'key-1' });

    const replay = await submitRun(app.deps, vmBody(), 'alice', { idempotencyKey: 'key-1' });

    expect(replay).toEqual({ run: first.run, created: false });
    expect(await storedRuns()).toHaveLength(1);
    expect(await enqueued()).toEqual([first.run.id]);
  });

  it('takes a retry whose extra vars come in another key order as the same request', async () => {
    const vars = { app: { name: 'web', port: 80 }, env: 'prod' };
    const first = await submitRun(app.deps, vmBody({ extraVars: vars }), 'alice', {
      idempotencyKey: 'key-1',
    });

    const reordered = { env: 'prod', app: { port: 80, name: 'web' } };
    const replay = await submitRun(app.deps, vmBody({ extraVars: reordered }), 'alice', {
      idempotencyKey: 'key-1',
    });

    expect(replay).toEqual({ run: first.run, created: false });
    expect(await storedRuns()).toHaveLength(1);
  });

  it('refuses an idempotency key reused for a different request and writes nothing', async () => {
    await submitRun(app.deps, vmBody(), 'alice', { idempotencyKey: 'key-1' });

    const reuse = submitRun(app.deps, vmBody({ extraVars: { greeting: 'other' } }), 'alice', {
      idempotencyKey: 'key-1',
    });

    await expect(reuse).rejects.toBeInstanceOf(IdempotencyMismatchError);
    expect(await storedRuns()).toHaveLength(1);
    expect(await enqueued()).toHaveLength(1);
  });

  it.each([
    [
      'a virtual desktop target',
      vmBody({ targetId: 'desk-1' }),
      'Target desk-1 is a virtual desktop; a vm run needs a vm',
    ],
    [
      'a run kind that does not fit the target',
      SubmitRunBody.parse({ kind: 'cluster_play', targetId: 'vm-1', asset: 'hello/site.yml' }),
      'Target vm-1 is a vm; a cluster_play run needs a cluster',
    ],
    [
      'a portainer run given a target',
      SubmitRunBody.parse({ kind: 'portainer', targetId: 'vm-1', asset: 'hello/site.yml' }),
      'Portainer runs act on the one configured connection and take no targetId',
    ],
  ])('throws for %s and writes nothing', async (_what, body, message) => {
    const attempt = submitRun(app.deps, body, 'alice');

    await expect(attempt).rejects.toBeInstanceOf(RunnerRefusedError);
    await expect(attempt).rejects.toThrow(message);
    expect(await storedRuns()).toEqual([]);
    expect(app.dispatchQueue.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('answers a validation error for an unknown target and writes nothing', async () => {
    const attempt = submitRun(app.deps, vmBody({ targetId: 'vm-nope' }), 'alice');

    await expect(attempt).rejects.toBeInstanceOf(ValidationError);
    await expect(attempt).rejects.toThrow('No target with id vm-nope is registered');
    expect(await storedRuns()).toEqual([]);
  });

  it('throws for an asset that does not exist and writes nothing', async () => {
    const attempt = submitRun(app.deps, vmBody({ asset: 'hello/missing.yml' }), 'alice');

    await expect(attempt).rejects.toBeInstanceOf(AssetNotFoundError);
    expect(await storedRuns()).toEqual([]);
    expect(app.dispatchQueue.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });
});

describe('cancelRun', () => {
  let app: TestApp;

  beforeEach(async () => {
    app = makeTestApp();
    await app.targets.putTarget(vmTarget('vm-1'));
  });
  afterEach(() => app.close());

  it('cancels a queued run at once', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });

    const cancelled = await cancelRun(app.deps, run.id);

    expect(cancelled).toMatchObject({
      state: 'cancelled',
      cancelRequested: true,
      reason: 'Cancelled before it started',
    });
    expect(await app.store.getRun(run.id)).toEqual(cancelled);
  });

  it('cancels at once a local run handed to the relay queue that no relay has claimed', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    await markLaunched(app.store, app.clock, run, { owner: 'dispatcher:m-1' });

    const cancelled = await cancelRun(app.deps, run.id);

    expect(cancelled).toMatchObject({
      state: 'cancelled',
      cancelRequested: true,
      reason: 'Cancelled before a relay took it',
    });
  });

  it('only flags a local run a relay has claimed, for the relay to stop', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    const launched = await markLaunched(app.store, app.clock, run, { owner: 'relay:x' });

    const flagged = await cancelRun(app.deps, run.id);

    expect(flagged).toMatchObject({ state: 'launched', owner: 'relay:x', cancelRequested: true });
    expect(flagged.version).toBe(launched.version + 1);
    expect(flagged.history).toEqual(launched.history);
  });

  it('flags a launched cloud run and asks its backend to stop the task at once', async () => {
    const ecsApp = makeTestApp({ launcherBackend: 'ecs' });
    const run = await createQueuedRun(ecsApp.store, ecsApp.clock, { id: 'run-1' });
    await markLaunched(ecsApp.store, ecsApp.clock, run, { backend: 'ecs', handle: 'ecs:c/t' });

    const flagged = await cancelRun(ecsApp.deps, run.id);

    expect(flagged).toMatchObject({ state: 'launched', cancelRequested: true });
    expect(ecsApp.launcher.cancels).toEqual([{ handle: 'ecs:c/t', runId: run.id, graceSeconds: 30 }]);
    ecsApp.close();
  });

  it('keeps the cancel flag when the backend refuses the stop request, for the reconciler to retry', async () => {
    const ecsApp = makeTestApp({ launcherBackend: 'ecs' });
    ecsApp.launcher.cancel = async () => {
      throw new Error('ECS is throttling');
    };
    const run = await createQueuedRun(ecsApp.store, ecsApp.clock, { id: 'run-1' });
    await markLaunched(ecsApp.store, ecsApp.clock, run, { backend: 'ecs', handle: 'ecs:c/t' });

    const flagged = await cancelRun(ecsApp.deps, run.id);

    expect(flagged).toMatchObject({ state: 'launched', cancelRequested: true });
    expect(await ecsApp.store.getRun(run.id)).toMatchObject({ cancelRequested: true });
    ecsApp.close();
  });

  it('refuses a finished run with InvalidTransitionError and changes nothing', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    await markLaunched(app.store, app.clock, run, { owner: 'relay:x' });
    const done = await settleRun(app.store, run.id, (r) =>
      transition(r, 'succeeded', app.clock.now(), { patch: { exitCode: 0 } }),
    );

    const cancel = cancelRun(app.deps, run.id);

    await expect(cancel).rejects.toBeInstanceOf(InvalidTransitionError);
    await expect(cancel).rejects.toThrow('Run run-1 is succeeded and can no longer be cancelled');
    expect(await app.store.getRun(run.id)).toEqual(done);
  });

  it('refuses a second cancel of a run the first one cancelled', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    const cancelled = await cancelRun(app.deps, run.id);

    await expect(cancelRun(app.deps, run.id)).rejects.toBeInstanceOf(InvalidTransitionError);
    expect(await app.store.getRun(run.id)).toEqual(cancelled);
  });

  it('answers a repeated cancel of a run still stopping with the run, unchanged', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-1' });
    await markLaunched(app.store, app.clock, run, { owner: 'relay:x' });
    const flagged = await cancelRun(app.deps, run.id);

    expect(await cancelRun(app.deps, run.id)).toEqual(flagged);
  });

  it('answers NotFoundError for an unknown run', async () => {
    await expect(cancelRun(app.deps, 'run-nope')).rejects.toBeInstanceOf(NotFoundError);
  });
});
