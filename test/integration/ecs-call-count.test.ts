import { DescribeTasksCommand } from '@aws-sdk/client-ecs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallCounter } from '../../bench/support/call-counter.ts';
import { parseEcsHandle } from '../../shared/adapters/ecs/handle.ts';
import { ecsCallRig, type Phases } from '../support/ecs-call-rig.ts';
import { useMoto } from '../support/moto.ts';

/*
 * AWS calls per ECS VM run with the deployment's SSH key, counted per phase
 * with SDK middleware on every client the handlers use (moto 5.2.1; the
 * figure itself is bench/aws-calls.ts). The design minimum is 11 calls:
 * submit 4 (target, asset HEAD, run write, dispatch message), dispatch 4
 * (claim, target, RunTask, `launched` write), status 2 (one write per ECS
 * event), read 1. Reached here: 12 — dispatch takes a token from the ECS launch
 * budget the dispatcher containers share (one conditional UpdateItem on the
 * runs table, shared/adapters/dynamodb/launch-budget.ts). Presigning the
 * task's read URL makes no request (S3AssetStore.grantRead: submit's HEAD is
 * the asset's existence check). Each ECS
 * event is one conditional UpdateItem with no read before it
 * (RunStore.advanceRun, shared/adapters/dynamodb/run-advance.ts); the read
 * replays the advances over the run's body. A container's first run
 * also pays DescribeSecret and the shared task definition revision (found or
 * registered) once.
 *
 * Where moto differs from AWS: ECS ignores clientToken (not relied on: no
 * redelivery here), and moto emits no ECS events, so the EventBridge events
 * are built in their AWS shape (bench/support/aws-events.ts).
 */
const moto = useMoto();

const byOp = (m: Map<string, number> | undefined) => Object.fromEntries([...(m ?? new Map())].sort());
const total = (phases: Phases) =>
  Object.values(phases).reduce((n, m) => n + [...m.values()].reduce((a, b) => a + b, 0), 0);

describe('AWS calls per ECS VM run with an SSH key (moto)', () => {
  let rig: Awaited<ReturnType<typeof ecsCallRig>>;
  const counter = new CallCounter();
  beforeAll(async () => {
    rig = await ecsCallRig(moto().clientConfig(), counter);
  }, 60_000);
  afterAll(() => rig?.close());

  it('counts 12 calls per run once the container is warm: submit 4, dispatch 5 (with the launch-budget take), each status event 1, read 1', async () => {
    const first = await rig.ecsLifecycle(1);
    // First run in a fresh container: the SSH key's ARN and the shared revision are looked up once.
    expect(byOp(first.phases.dispatch)).toEqual({
      'DynamoDB.GetItem': 1,
      'DynamoDB.PutItem': 1,
      'DynamoDB.UpdateItem': 2,
      'ECS.DescribeTaskDefinition': 2,
      'ECS.RegisterTaskDefinition': 1,
      'ECS.RunTask': 1,
      'SecretsManager.DescribeSecret': 1,
    });

    const { phases, states } = await rig.ecsLifecycle(1);

    expect(Object.fromEntries(states)).toEqual({ succeeded: 1 });
    expect(byOp(phases['POST /runs'])).toEqual({
      'DynamoDB.GetItem': 1,
      'DynamoDB.PutItem': 1,
      'S3.HeadObject': 1,
      'SQS.SendMessage': 1,
    });
    // The claim is one UpdateItem returning the run, the budget take another; no ListTasks on a first delivery;
    // no per-run task definition; no asset HEAD (the read URL is presigned locally).
    expect(byOp(phases.dispatch)).toEqual({
      'DynamoDB.GetItem': 1,
      'DynamoDB.PutItem': 1,
      'DynamoDB.UpdateItem': 2,
      'ECS.RunTask': 1,
    });
    for (const event of ['ECS RUNNING event', 'ECS STOPPED event']) {
      expect({ event, calls: byOp(phases[event]) }).toEqual({
        event,
        // One conditional write, no read before it (RunStore.advanceRun).
        calls: { 'DynamoDB.UpdateItem': 1 },
      });
    }
    expect(byOp(phases['GET /runs/{id}'])).toEqual({ 'DynamoDB.GetItem': 1 });
    expect(total(phases)).toBe(12);
  }, 60_000);

  it('launches a 50-run burst of AWS VM runs with no task definition registered, listed or removed per run', async () => {
    const { phases, states } = await rig.ecsLifecycle(50);

    expect(Object.fromEntries(states)).toEqual({ succeeded: 50 });
    const calls = new Map<string, number>();
    for (const m of Object.values(phases)) for (const [op, n] of m) calls.set(op, (calls.get(op) ?? 0) + n);
    expect(calls.get('ECS.RunTask')).toBe(50);
    // At most the once-per-container lookups (none when the test above warmed it), never one per run.
    const once = {
      'ECS.RegisterTaskDefinition': 1,
      'ECS.DescribeTaskDefinition': 2,
      'SecretsManager.DescribeSecret': 1,
    };
    for (const [op, max] of Object.entries(once)) {
      expect({ op, atMostOnce: (calls.get(op) ?? 0) <= max }).toEqual({ op, atMostOnce: true });
    }
    for (const op of ['ECS.ListTaskDefinitions', 'ECS.DeregisterTaskDefinition', 'ECS.ListTasks']) {
      expect({ op, calls: calls.get(op) ?? 0 }).toEqual({ op, calls: 0 });
    }
    // Every task runs the one shared revision that carries the SSH key.
    const listed = await rig.store.listRuns({ state: 'succeeded', limit: 100 });
    const arns = listed.runs.flatMap((r) => parseEcsHandle(r.launch?.handle)?.taskArn ?? []);
    expect(arns.length).toBeGreaterThanOrEqual(50);
    const definitions = new Set<string>();
    for (let i = 0; i < arns.length; i += 100) {
      const { tasks } = await rig.setup.ecs.send(
        new DescribeTasksCommand({ cluster: rig.names.cluster, tasks: arns.slice(i, i + 100) }),
      );
      for (const t of tasks ?? []) definitions.add(t.taskDefinitionArn ?? '');
    }
    expect([...definitions]).toHaveLength(1);
    expect([...definitions][0]).toMatch(/:task-definition\/remote-worker-run-shared-[0-9a-f]{16}:1$/);
  }, 120_000);
});
