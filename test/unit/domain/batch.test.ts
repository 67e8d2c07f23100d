import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkBatchSelection,
  duplicateTargets,
  MAX_BATCH_TARGETS,
  planRetry,
  rollupBatch,
} from '../../../shared/domain/batch.ts';
import { newRun, RUN_STATES, type Run, type RunState, transition } from '../../../shared/domain/run.ts';
import type { Target } from '../../../shared/domain/target.ts';

const AT = '2025-01-01T00:00:00.000Z';
const stamp = { createdAt: AT, updatedAt: AT };

const vm = (id: string, extra: Partial<Extract<Target, { kind: 'vm' }>> = {}): Target => ({
  id,
  kind: 'vm',
  cloud: 'local',
  name: id,
  address: '10.0.0.5',
  connection: 'ssh',
  ...stamp,
  ...extra,
});
const cluster = (id: string): Target => ({
  id,
  kind: 'cluster',
  cloud: 'aws',
  name: id,
  provider: 'eks',
  ...stamp,
});
const database = (id: string, engine: 'postgresql' | 'oracle', cloud: 'aws' | 'oci' = 'aws'): Target => ({
  id,
  kind: 'database',
  cloud,
  name: id,
  engine,
  endpoint: { host: 'db.internal' },
  source: 'provisioned',
  ...stamp,
});
const desktop = (id: string): Target => ({ id, kind: 'virtual_desktop', cloud: 'azure', name: id, ...stamp });

const registryOf = (...targets: Target[]) => new Map(targets.map((t) => [t.id, t]));

describe('checkBatchSelection', () => {
  it('accepts 1–50 targets of the run kind, in request order', () => {
    const registry = registryOf(vm('b'), vm('a'));

    const check = checkBatchSelection('vm', ['b', 'a'], registry);

    expect(check).toEqual({ ok: true, targets: [vm('b'), vm('a')] });
  });

  it('accepts exactly 50 targets and refuses 51 as a whole, naming no single target', () => {
    const ids = Array.from({ length: MAX_BATCH_TARGETS + 1 }, (_, i) => `vm-${i}`);
    const registry = registryOf(...ids.map((id) => vm(id)));

    expect(checkBatchSelection('vm', ids.slice(0, 50), registry).ok).toBe(true);
    const refused = checkBatchSelection('vm', ids, registry);

    expect(refused).toEqual({
      ok: false,
      summary: expect.stringMatching(/at most 50 targets; this one has 51/),
      problems: [],
    });
  });

  it('refuses an empty selection', () => {
    expect(checkBatchSelection('vm', [], new Map())).toMatchObject({
      ok: false,
      summary: expect.stringMatching(/at least one/),
    });
  });

  it('names every repeat of an id after its first occurrence', () => {
    const check = checkBatchSelection('vm', ['a', 'b', 'a', 'a'], registryOf(vm('a'), vm('b')));

    expect(check).toMatchObject({
      ok: false,
      problems: [
        { index: 2, targetId: 'a', reason: 'a is already selected (targetIds[0])' },
        { index: 3, targetId: 'a', reason: 'a is already selected (targetIds[0])' },
      ],
    });
  });

  it('names unknown ids', () => {
    const check = checkBatchSelection('vm', ['a', 'ghost'], registryOf(vm('a')));

    expect(check).toMatchObject({
      ok: false,
      summary: '1 of 2 targets cannot be selected for a vm run',
      problems: [{ index: 1, targetId: 'ghost', reason: 'No target with id ghost is registered' }],
    });
  });

  it('refuses mixed kinds, naming each target that does not fit the run kind', () => {
    const check = checkBatchSelection(
      'vm',
      ['a', 'k', 'db'],
      registryOf(vm('a'), cluster('k'), database('db', 'postgresql')),
    );

    expect(check).toMatchObject({
      ok: false,
      summary: 'The selection mixes vm and cluster and database targets: one kind per batch',
      problems: [
        { targetId: 'k', reason: 'Target k is a cluster; a vm run needs a vm' },
        { targetId: 'db', reason: 'Target db is a database; a vm run needs a vm' },
      ],
    });
  });

  it('refuses targets of one kind that does not fit the run kind', () => {
    const check = checkBatchSelection('database_play', ['a', 'b'], registryOf(vm('a'), vm('b')));

    expect(check).toMatchObject({
      ok: false,
      summary: '2 of 2 targets cannot be selected for a database_play run',
    });
    if (!check.ok) expect(check.problems.map((p) => p.targetId)).toEqual(['a', 'b']);
  });

  const byNodeAndVmid: Target = {
    id: 'x',
    kind: 'vm',
    cloud: 'local',
    name: 'x',
    connection: 'ssh',
    node: 'pve1',
    vmid: 101,
    ...stamp,
  };

  it.each([
    ['a virtual desktop', 'vm', desktop('x'), /virtual desktop is a seat/],
    ['a VM known only by node + VMID', 'vm', byNodeAndVmid, /node \+ VMID/],
    ['a database whose engine has no runner', 'database_play', database('x', 'oracle'), /oracle engine/],
    ['a database on oci', 'database_play', database('x', 'postgresql', 'oci'), /oci/],
  ] as const)('refuses %s with its reason', (_name, kind, row, reason) => {
    const fine = kind === 'vm' ? vm('ok') : database('ok', 'postgresql');

    const check = checkBatchSelection(kind, ['ok', 'x'], registryOf(fine, row));

    expect(check).toMatchObject({
      ok: false,
      summary: `1 of 2 targets cannot be selected for a ${kind} run`,
      problems: [{ index: 1, targetId: 'x', reason: expect.stringMatching(reason) }],
    });
  });

  it('refuses a portainer batch: portainer runs take no target', () => {
    const check = checkBatchSelection('portainer', ['a'], registryOf(vm('a')));

    expect(check).toMatchObject({
      ok: false,
      summary: expect.stringMatching(/cannot be batched/),
      problems: [{ targetId: 'a' }],
    });
  });

  it('lists every problem of a selection at once', () => {
    const check = checkBatchSelection(
      'vm',
      ['a', 'desk', 'ghost', 'a'],
      registryOf(vm('a'), desktop('desk')),
    );

    expect(check.ok).toBe(false);
    if (!check.ok)
      expect(check.problems.map((p) => [p.index, p.targetId])).toEqual([
        [1, 'desk'],
        [2, 'ghost'],
        [3, 'a'],
      ]);
  });

  it('accepts a selection exactly when it has no problems (property)', () => {
    const ids = ['a', 'b', 'c', 'desk', 'k', 'ghost'];
    const registry = registryOf(vm('a'), vm('b'), vm('c'), desktop('desk'), cluster('k'));
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...ids), { minLength: 1, maxLength: 8 }), (selection) => {
        const check = checkBatchSelection('vm', selection, registry);
        const clean =
          new Set(selection).size === selection.length &&
          selection.every((id) => ['a', 'b', 'c'].includes(id));
        expect(check.ok).toBe(clean);
        if (!check.ok) expect(check.problems.length).toBeGreaterThan(0);
      }),
    );
  });
});

describe('duplicateTargets', () => {
  it('is empty for distinct ids', () => {
    expect(duplicateTargets(['a', 'b'])).toEqual([]);
  });
});

/** A run of batch `b-1` for `targetId`, moved through `states` (queued first). */
function runOf(id: string, targetId: string, states: RunState[] = [], extra: Partial<Run> = {}): Run {
  let run = newRun(
    {
      id,
      kind: 'vm',
      targetId,
      asset: 'hello/site.yml',
      extraVars: { greeting: 'hi' },
      secrets: [{ var: 'token', secret: 'api-token' }],
      sshUser: 'deploy',
      batchId: 'b-1',
      requestedBy: 'alice',
      timeoutSeconds: 600,
    },
    AT,
  );
  for (const state of states)
    run = transition(
      run,
      state,
      AT,
      state === 'refused' || state === 'failed' ? { reason: `${state} on purpose` } : {},
    );
  return { ...run, ...extra };
}

const through = (end: RunState): RunState[] =>
  end === 'refused' || end === 'cancelled' ? [end] : ['dispatching', 'launched', 'running', end];

describe('rollupBatch', () => {
  it('counts runs per state, every state present', () => {
    const rollup = rollupBatch('b-1', [
      runOf('r2', 'b', through('succeeded')),
      runOf('r1', 'a', through('succeeded')),
      runOf('r3', 'c', ['dispatching']),
      runOf('r4', 'd', ['refused']),
    ]);

    expect(rollup.total).toBe(4);
    expect(rollup.counts).toEqual(
      Object.fromEntries(
        RUN_STATES.map((s) => [s, { succeeded: 2, dispatching: 1, refused: 1 }[s as string] ?? 0]),
      ),
    );
    expect(rollup.complete).toBe(false);
    expect(rollup.runs.map((r) => r.runId)).toEqual(['r1', 'r2', 'r3', 'r4']);
  });

  it('is complete when every run is terminal, and names the failures with their reasons', () => {
    const rollup = rollupBatch('b-1', [
      runOf('r1', 'a', through('succeeded')),
      runOf('r2', 'b', through('failed')),
      runOf('r3', 'c', ['refused']),
      runOf('r4', 'd', ['cancelled']),
      runOf('r5', 'e', through('timed_out')),
    ]);

    expect(rollup.complete).toBe(true);
    expect(rollup.failed).toEqual([
      { runId: 'r2', targetId: 'b', state: 'failed', reason: 'failed on purpose' },
      { runId: 'r3', targetId: 'c', state: 'refused', reason: 'refused on purpose' },
      { runId: 'r4', targetId: 'd', state: 'cancelled' },
      { runId: 'r5', targetId: 'e', state: 'timed_out' },
    ]);
  });

  it('carries the request and the batch it retried', () => {
    const rollup = rollupBatch('b-2', [runOf('r1', 'a', [], { retryOfBatch: 'b-1' })]);

    expect(rollup).toMatchObject({
      kind: 'vm',
      asset: 'hello/site.yml',
      requestedBy: 'alice',
      createdAt: AT,
      retryOf: 'b-1',
    });
  });

  it('counts add up to the total (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom<RunState>('succeeded', 'failed', 'refused', 'cancelled'), {
          minLength: 1,
          maxLength: 50,
        }),
        (ends) => {
          const rollup = rollupBatch(
            'b',
            ends.map((end, i) => runOf(`r${String(i).padStart(2, '0')}`, `t${i}`, through(end))),
          );
          expect(Object.values(rollup.counts).reduce((a, b) => a + b, 0)).toBe(ends.length);
          expect(rollup.failed.length).toBe(ends.filter((e) => e !== 'succeeded').length);
        },
      ),
    );
  });
});

describe('planRetry', () => {
  it('re-submits the original request for the targets that did not succeed, in order', () => {
    const plan = planRetry([
      runOf('r3', 'c', ['refused']),
      runOf('r1', 'a', through('succeeded')),
      runOf('r2', 'b', through('failed')),
      runOf('r4', 'd', ['dispatching']),
    ]);

    expect(plan).toEqual({
      targetIds: ['b', 'c'],
      request: {
        kind: 'vm',
        asset: 'hello/site.yml',
        extraVars: { greeting: 'hi' },
        secrets: [{ var: 'token', secret: 'api-token' }],
        sshUser: 'deploy',
        timeoutSeconds: 600,
      },
    });
  });

  it('has nothing to retry when every run succeeded or is still in flight', () => {
    expect(
      planRetry([runOf('r1', 'a', through('succeeded')), runOf('r2', 'b', ['dispatching'])]),
    ).toBeUndefined();
  });
});
