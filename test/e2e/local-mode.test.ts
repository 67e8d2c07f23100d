import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Api,
  allLogs,
  client,
  LOCALHOST_TARGET,
  type LocalProcess,
  newDataDir,
  pidsInGroup,
  startLocal,
  waitForState,
} from './harness.ts';

describe('local mode over HTTP with the real ansible-playbook', () => {
  let local: LocalProcess;
  let api: Api;

  beforeAll(async () => {
    local = await startLocal(newDataDir());
    api = client(local.url, local.token);
    const put = await api('PUT', '/targets/localhost', LOCALHOST_TARGET);
    expect(put.status).toBe(201);
  });
  afterAll(async () => {
    await local?.stop();
  });

  it('runs a play to success with its output in /runs/{id}/logs', async () => {
    const submitted = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'localhost',
      asset: 'hello/site.yml',
      extraVars: { greeting: 'hi there' },
    });
    expect(submitted.status).toBe(202);
    expect(submitted.body).toMatchObject({ state: 'queued', runner: 'local' });

    const run = await waitForState(api, submitted.body.id, 'terminal');

    expect(run.state).toBe('succeeded');
    expect(run.exitCode).toBe(0);
    expect(run.history.map((h: { state: string }) => h.state)).toEqual([
      'queued',
      'dispatching',
      'launched',
      'running',
      'succeeded',
    ]);
    expect(await allLogs(api, run.id)).toContain('hi there from localhost');
  });

  it('ends a failing play failed, with its exit code and message', async () => {
    const submitted = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'localhost',
      asset: 'hello/fail.yml',
      extraVars: { reason: 'disk is full on purpose' },
    });

    const run = await waitForState(api, submitted.body.id, 'terminal');

    expect(run.state).toBe('failed');
    expect(run.exitCode).toBe(2);
    expect(run.reason).toContain('exited with code 2');
    expect(run.reason).toContain('disk is full on purpose');
  });

  it('cancels a long play and leaves no process behind', async () => {
    const submitted = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'localhost',
      asset: 'hello/slow.yml',
      extraVars: { seconds: 120 },
    });
    const running = await waitForState(api, submitted.body.id, ['running']);
    const pid = Number(/process:(\d+):/.exec(running.launch.handle)?.[1]);
    expect(pidsInGroup(pid).length).toBeGreaterThan(0);

    const cancel = await api('POST', `/runs/${running.id}/cancel`);
    expect(cancel.status).toBe(202);
    expect(cancel.body.cancelRequested).toBe(true);
    const run = await waitForState(api, running.id, 'terminal');

    expect(run.state).toBe('cancelled');
    expect(pidsInGroup(pid)).toEqual([]);
  });

  it('ends a play that outlives timeoutSeconds timed_out and kills it', async () => {
    const submitted = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'localhost',
      asset: 'hello/slow.yml',
      extraVars: { seconds: 120 },
      timeoutSeconds: 3,
    });
    const running = await waitForState(api, submitted.body.id, ['running']);
    const pid = Number(/process:(\d+):/.exec(running.launch.handle)?.[1]);

    const run = await waitForState(api, running.id, 'terminal');

    expect(run.state).toBe('timed_out');
    expect(run.reason).toContain('3 s timeout');
    expect(pidsInGroup(pid)).toEqual([]);
  });

  it('cancels a queued run before it starts', async () => {
    // Three slow runs fill the relay (RELAY_CONCURRENCY defaults to 3), so the fourth waits.
    const blockers = await Promise.all(
      [1, 2, 3].map(() =>
        api('POST', '/runs', {
          kind: 'vm',
          targetId: 'localhost',
          asset: 'hello/slow.yml',
          extraVars: { seconds: 60 },
        }),
      ),
    );
    const waiting = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'localhost',
      asset: 'hello/site.yml',
    });

    await api('POST', `/runs/${waiting.body.id}/cancel`);
    const run = await waitForState(api, waiting.body.id, 'terminal');

    expect(run.state).toBe('cancelled');
    expect(run.history.map((h: { state: string }) => h.state)).not.toContain('running');
    for (const b of blockers) await api('POST', `/runs/${b.body.id}/cancel`);
    for (const b of blockers) await waitForState(api, b.body.id, 'terminal');
  });

  it('returns the first run for a repeated Idempotency-Key', async () => {
    const body = { kind: 'vm', targetId: 'localhost', asset: 'hello/site.yml' };
    const first = await api('POST', '/runs', body, { 'idempotency-key': 'deploy-42' });
    const again = await api('POST', '/runs', body, { 'idempotency-key': 'deploy-42' });
    const other = await api(
      'POST',
      '/runs',
      { ...body, extraVars: { x: 1 } },
      { 'idempotency-key': 'deploy-42' },
    );

    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(other.status).toBe(422);
    expect(other.headers.get('content-type')).toBe('application/problem+json');
  });
});
