import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileSecretSource } from '../../../shared/adapters/local/secret-source.ts';
import { prepareTask } from '../../../shared/app/task-prep.ts';
import { LaunchRejectedError } from '../../../shared/domain/errors.ts';
import { checkTaskSpec } from '../../../shared/domain/task-spec.ts';
import { createQueuedRun, makeTestApp, type TestApp, vmTarget } from './harness.ts';

describe('prepareTask and the task-spec schema', () => {
  let app: TestApp;
  const deps = () => ({
    store: app.store,
    targets: app.targets,
    assets: app.deps.assets,
    secrets: new FileSecretSource({ dataDir: '/nonexistent' }),
    clock: app.clock,
  });

  beforeEach(async () => {
    app = makeTestApp();
    await app.targets.putTarget(vmTarget('vm-1'));
  });
  afterEach(() => app.close());

  it('builds a spec the shim accepts, as is', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-ok', extraVars: { greeting: 'hi' } });

    const { spec } = await prepareTask(deps(), run);

    expect(checkTaskSpec(JSON.parse(JSON.stringify(spec)))).toEqual({ ok: true, spec });
  });

  it('refuses to hand over a spec the shim would refuse, naming the problem and no value', async () => {
    const run = await createQueuedRun(app.store, app.clock, { id: 'run-bad' });

    const error = await prepareTask(deps(), { ...run, timeoutSeconds: -1 }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect((error as Error).message).toBe(
      'Run run-bad makes an invalid task spec: timeoutSeconds must be a non-negative number',
    );
  });
});
