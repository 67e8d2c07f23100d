import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileRunSecretStore } from '../../../shared/adapters/local/run-secrets.ts';
import { retryBatch, submitBatch } from '../../../shared/app/batches.ts';
import type { AppDeps } from '../../../shared/app/deps.ts';
import { ACCOUNT_WAIT_SECONDS, dispatchRun, settleDeadLetter } from '../../../shared/app/dispatch.ts';
import { cancelRun, submitRun } from '../../../shared/app/runs.ts';
import { loadSettings } from '../../../shared/config/settings.ts';
import {
  IdempotencyMismatchError,
  NothingToRetryError,
  ValidationError,
} from '../../../shared/domain/errors.ts';
import { SubmitBatchBody, SubmitRunBody } from '../../../shared/http/request-schemas.ts';
import { makeTestApp, type TestApp, vmTarget } from './harness.ts';

const CANARY = 'canary-0f3c9e1d5a7b';
const runBody = (extra: Record<string, unknown> = {}) =>
  SubmitRunBody.parse({
    kind: 'vm',
    targetId: 'vm-1',
    asset: 'hello/site.yml',
    extraVars: { ansible_password: CANARY, greeting: 'hi' },
    ...extra,
  });

describe('plaintext passwords at submit', () => {
  let app: TestApp;
  let dataDir: string;
  let runSecrets: FileRunSecretStore;
  let deps: AppDeps;
  /** run id → keys held in the per-run store. */
  const held = () =>
    Object.fromEntries(
      readdirSync(runSecrets.root).map((id) => [id, readdirSync(join(runSecrets.root, id)).sort()]),
    );

  // AWS VMs run on ECS, which takes credentials only through secret bindings; the rest on the relay.
  const ECS_FOR_AWS = { ANSIBLE_RUNNER_AWS: 'ecs' };

  beforeEach(async () => {
    app = makeTestApp({ env: ECS_FOR_AWS });
    dataDir = mkdtempSync(join(tmpdir(), 'rw-run-secrets-'));
    runSecrets = new FileRunSecretStore({ dataDir });
    deps = { ...app.deps, runSecrets };
    await app.targets.putTarget(vmTarget('vm-1'));
    await app.targets.putTarget(vmTarget('vm-2', { address: '10.0.0.6' }));
    await app.targets.putTarget(vmTarget('vm-aws', { cloud: 'aws' }));
  });
  afterEach(() => {
    app.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps the value in the per-run store and binds its name; the record holds no value', async () => {
    const { run } = await submitRun(deps, runBody(), 'alice');

    const stored = await app.store.getRun(run.id);
    expect(JSON.stringify(stored)).not.toContain(CANARY);
    expect(stored?.extraVars).toEqual({ greeting: 'hi' });
    expect(stored?.secrets).toEqual([
      { var: 'ansible_password', secret: `run-secret:${run.id}/ansible_password` },
    ]);
    expect(stored?.ephemeralSecrets).toEqual(['ansible_password']);
    expect(await runSecrets.get(`run-secret:${run.id}/ansible_password`)).toBe(CANARY);
  });

  it('leaves one secret for a retried submit, and none for a key reused with another password', async () => {
    const key = { idempotencyKey: 'k-1' };
    const first = await submitRun(deps, runBody(), 'alice', key);
    const again = await submitRun(deps, runBody(), 'alice', key);
    await expect(
      submitRun(deps, runBody({ extraVars: { ansible_password: 'other', greeting: 'hi' } }), 'alice', key),
    ).rejects.toBeInstanceOf(IdempotencyMismatchError);

    expect(again).toMatchObject({ created: false, run: { id: first.run.id } });
    expect(held()).toEqual({ [first.run.id]: ['ansible_password'] });
  });

  it('keeps no value for a refused run, and refuses when there is no per-run store', async () => {
    const refused = await submitRun(deps, runBody({ targetId: 'vm-aws' }), 'alice');
    const noStore = await submitRun(app.deps, runBody(), 'alice');

    expect(refused.run.state).toBe('refused');
    expect(refused.run.reason).toMatch(/does not forward a plaintext ansible_password/);
    expect(noStore.run.state).toBe('refused');
    expect(noStore.run.reason).toMatch(/no per-run secret store .*bind ansible_password to a named secret/);
    expect(existsSync(runSecrets.root) ? held() : {}).toEqual({});
    expect(JSON.stringify([refused.run, noStore.run])).not.toContain(CANARY);
  });

  it('refuses a binding to another run’s per-run secret', async () => {
    const { run } = await submitRun(deps, runBody(), 'alice');

    await expect(
      submitRun(
        deps,
        runBody({
          extraVars: {},
          secrets: [{ var: 'stolen', secret: `run-secret:${run.id}/ansible_password` }],
        }),
        'mallory',
      ),
    ).rejects.toBeInstanceOf(ValidationError);
  });

  it('deletes the secret when the run ends: cancelled while queued, refused or dead-lettered at dispatch', async () => {
    const relayForAws = { ...deps, settings: loadSettings({ env: {} }) };
    const cancelled = (await submitRun(deps, runBody(), 'alice')).run;
    const refused = (await submitRun(relayForAws, runBody({ targetId: 'vm-aws' }), 'alice')).run;
    const dead = (await submitRun(deps, runBody(), 'alice')).run;
    expect(Object.keys(held()).sort()).toEqual([cancelled.id, refused.id, dead.id].sort());

    await cancelRun(deps, cancelled.id);
    // The runner setting changed after submit: the plaintext rule still holds at dispatch.
    expect(await dispatchRun(deps, refused.id, 'd-1')).toBe('settled');
    await settleDeadLetter(deps, dead.id, 5);

    expect((await app.store.getRun(refused.id))?.reason).toMatch(
      /does not forward a plaintext ansible_password/,
    );
    expect(held()).toEqual({});
  });

  it('gives each queued run of a batch its own secret, and refuses to retry the batch without the value', async () => {
    const batch = await submitBatch(
      deps,
      SubmitBatchBody.parse({
        kind: 'vm',
        targetIds: ['vm-1', 'vm-2', 'vm-aws'],
        asset: 'hello/site.yml',
        extraVars: { ansible_password: CANARY },
      }),
      'alice',
    );

    expect(batch.runs.map((r) => r.targetId)).toEqual(['vm-1', 'vm-2']);
    expect(batch.failed.map((f) => f.targetId)).toEqual(['vm-aws']);
    expect(held()).toEqual(Object.fromEntries(batch.runs.map((r) => [r.id, ['ansible_password']])));
    await expect(retryBatch(deps, batch.batchId, 'alice')).rejects.toThrow(NothingToRetryError);
    await expect(retryBatch(deps, batch.batchId, 'alice')).rejects.toThrow(/plaintext ansible_password/);
  });
});

describe('runs on one managed account at dispatch', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = makeTestApp();
    await app.targets.putTarget(vmTarget('vm-1'));
    await app.targets.putTarget(vmTarget('vm-2', { address: '10.0.0.6' }));
  });
  afterEach(() => app.close());
  const submit = async (targetId: string, managedAccount: string) =>
    (
      await submitRun(
        app.deps,
        SubmitRunBody.parse({ kind: 'vm', targetId, asset: 'hello/site.yml', managedAccount }),
        'alice',
      )
    ).run;

  it('lets a second run on an account in use wait queued, and start once the first has ended', async () => {
    const first = await submit('vm-1', 'root');
    const second = await submit('vm-1', 'root');
    const otherHost = await submit('vm-2', 'root');
    const queued = app.dispatchQueue.depth();

    expect(await dispatchRun(app.deps, first.id, 'd-1')).toBe('launched');
    expect(await dispatchRun(app.deps, second.id, 'd-2')).toBe('deferred');
    // A bare account name is matched on each host: another host's `root` is another account.
    expect(await dispatchRun(app.deps, otherHost.id, 'd-3')).toBe('launched');

    expect((await app.store.getRun(first.id))?.heldAccount).toBe('10.0.0.5/root');
    expect((await app.store.getRun(second.id))?.state).toBe('queued');
    expect(app.dispatchQueue.depth().delayed).toBe(queued.delayed + 1);
    expect(app.launcher.launches.map((c) => c.runId)).toEqual([first.id, otherHost.id]);

    await settleDeadLetter(app.deps, first.id, 5);
    app.clock.advance(ACCOUNT_WAIT_SECONDS * 1000);
    expect(await dispatchRun(app.deps, second.id, 'd-2')).toBe('launched');
  });

  it('takes over an account whose holder ended without letting it go', async () => {
    const first = await submit('vm-1', 'shared/admin');
    const second = await submit('vm-2', 'shared/admin');
    await app.store.holdAccount('shared/admin', first.id);
    await cancelRun({ store: app.store, clock: app.clock }, first.id); // no release: as after a crash

    expect(await dispatchRun(app.deps, second.id, 'd-1')).toBe('launched');
    expect(await app.store.holdAccount('shared/admin', 'someone')).toBe(second.id);
  });
});
