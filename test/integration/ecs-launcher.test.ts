import {
  ClientException,
  DescribeTaskDefinitionCommand,
  DescribeTasksCommand,
  ECSClient,
  ListTaskDefinitionsCommand,
  ListTasksCommand,
  type RunTaskCommandInput,
} from '@aws-sdk/client-ecs';
import {
  CreateSecretCommand,
  GetSecretValueCommand,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EcsLauncherOptions, ecsNetworkFromSettings } from '../../shared/adapters/ecs/config.ts';
import { RUN_ID_TAG } from '../../shared/adapters/ecs/handle.ts';
import { EcsLauncher } from '../../shared/adapters/ecs/launcher.ts';
import { describeSecretArn } from '../../shared/adapters/ecs/secret-arn.ts';
import type { S3AssetStore } from '../../shared/adapters/s3/asset-store.ts';
import { SecretsManagerRunSecrets } from '../../shared/adapters/secrets-manager/run-secrets.ts';
import { SecretsManagerSecretSource } from '../../shared/adapters/secrets-manager/secret-source.ts';
import { openDatabase, type SqliteDatabase } from '../../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../shared/adapters/sqlite/target-store.ts';
import { cancelRun } from '../../shared/app/runs.ts';
import { syncBackends } from '../../shared/app/sync-backends.ts';
import { prepareTask } from '../../shared/app/task-prep.ts';
import { loadSettings } from '../../shared/config/settings.ts';
import { LauncherUnavailableError, LaunchRejectedError } from '../../shared/domain/errors.ts';
import { newRun, type Run, type SecretBinding, transition } from '../../shared/domain/run.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import { newId } from '../../shared/lib/ids.ts';
import { exampleAssets, s3AssetStore } from '../support/asset-stores.ts';
import { type MotoServer, startMoto } from '../support/moto.ts';
import { runTaskOnLocalhost } from '../support/task-run.ts';
import { createQueuedRun, ManualClock, markLaunched, silentLogger, vmTarget } from '../unit/app/harness.ts';
import { setUpEcsRunner } from './ecs-moto.ts';

/**
 * EcsLauncher against moto's ECS. Where moto differs from AWS (each test that
 * depends on it says so):
 * - it ignores `clientToken` (the same token twice makes two tasks), so
 *   idempotency is proven through ListTasks by startedBy, which it honours;
 * - it needs `memory` on the container definition, `launchType: 'FARGATE'`
 *   and `securityGroups` in the awsvpc configuration (else an HTML 500);
 * - with the manual state transition a task stays RUNNING from RunTask on;
 *   StopTask makes it STOPPED at once with no `stopCode`, and the container
 *   reports `exitCode: 0` even though it never ran;
 * - ListTasks returns stopped tasks without `desiredStatus: 'STOPPED'`;
 * - DescribeTasks leaves an unknown task out without a MISSING failure;
 * - it does not enforce the 8,192-character override limit or the 36-character
 *   startedBy limit (the launcher checks both itself).
 */
/** The HTTP request body as sent, whatever form the SDK built it in. */
const bodyText = (body: unknown): string => {
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return Buffer.from(body).toString('utf8');
  throw new Error(`unexpected request body type ${Object.prototype.toString.call(body)}`);
};

describe('EcsLauncher on moto', () => {
  const SECRET_VALUE = 'hunter2-do-not-leak-7f3a';
  const DB_PASSWORD = 'minted-db-pw-canary-91c2';
  const SSH_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nkey-body-canary\n-----END OPENSSH PRIVATE KEY-----\n';
  const CLUSTER = 'remote-worker';
  const IMAGE = 'chrweav/ansible-cloud';
  const FAMILY = 'remote-worker-ansible-cloud';

  let moto: MotoServer;
  /** The assets on moto's S3: an ECS task reads its asset through a presigned GET URL. */
  let assets: S3AssetStore;
  let ecs: ECSClient;
  let secretsManager: SecretsManagerClient;
  let db: SqliteDatabase;
  let store: SqliteRunStore;
  let targets: SqliteTargetStore;
  let network: { subnet: string; securityGroup: string };
  /** Every ECS request the launchers sent: command name, input and the raw HTTP body. */
  const sent: { command: string; input: unknown; body: string }[] = [];

  const launcher = (overrides: Partial<EcsLauncherOptions> = {}) =>
    new EcsLauncher({
      ecs,
      cluster: CLUSTER,
      taskDefinitions: { [IMAGE]: FAMILY },
      containerName: 'runner',
      // From the operator's settings, as the composition root builds it.
      network: ecsNetworkFromSettings(
        loadSettings({
          env: {
            ANSIBLE_ECS_SUBNET_ID: network.subnet,
            ANSIBLE_ECS_SECURITY_GROUP_IDS: network.securityGroup,
          },
        }),
      )!,
      prepare: (run) =>
        prepareTask(
          {
            store,
            targets,
            assets,
            // The real adapter: prepareTask does read the value; the launcher must never send it.
            secrets: new SecretsManagerSecretSource({ client: secretsManager, ttlSeconds: 0 }),
          },
          run,
        ),
      secretArn: describeSecretArn(secretsManager),
      logs: new SqliteLogStore({ db }),
      ...overrides,
    });

  /** A run as the dispatcher hands it to a launcher: claimed, attempt 1. */
  const dispatchingRun = (
    input: {
      secrets?: SecretBinding[];
      extraVars?: Record<string, unknown>;
      attempt?: number;
      kind?: Run['kind'];
      targetId?: string;
    } = {},
  ): Run => {
    const draft = newRun(
      {
        id: newId(),
        kind: input.kind ?? 'vm',
        targetId: input.targetId ?? 'vm-1',
        asset: 'hello/site.yml',
        extraVars: input.extraVars ?? { greeting: 'hi' },
        secrets: input.secrets ?? [],
        requestedBy: 'alice',
        timeoutSeconds: 600,
      },
      new Date().toISOString(),
    );
    return transition(draft, 'dispatching', new Date().toISOString(), {
      patch: { attempt: input.attempt ?? 1, owner: 'dispatcher:test', runner: 'ecs', image: IMAGE },
    });
  };

  const tasksStartedBy = async (startedBy: string): Promise<string[]> => {
    const all = new Set<string>();
    for (const desiredStatus of ['RUNNING', 'STOPPED'] as const) {
      const { taskArns } = await ecs.send(
        new ListTasksCommand({ cluster: CLUSTER, startedBy, desiredStatus }),
      );
      for (const arn of taskArns ?? []) all.add(arn);
    }
    return [...all];
  };

  const describe1 = async (handle: string) => {
    const taskArn = handle.slice(`ecs:${CLUSTER}/`.length);
    const { tasks } = await ecs.send(
      new DescribeTasksCommand({ cluster: CLUSTER, tasks: [taskArn], include: ['TAGS'] }),
    );
    return tasks?.[0];
  };

  const runTaskInputs = () =>
    sent.filter((s) => s.command === 'RunTaskCommand').map((s) => s.input as RunTaskCommandInput);

  beforeAll(async () => {
    moto = await startMoto();
    ecs = new ECSClient(moto.clientConfig());
    secretsManager = new SecretsManagerClient(moto.clientConfig());
    assets = await s3AssetStore(moto, 'rw-assets', exampleAssets('hello/site.yml'));
    ecs.middlewareStack.add(
      (next, context) => async (args) => {
        const request = (args as { request?: { body?: unknown } }).request;
        sent.push({
          command: context.commandName ?? '?',
          input: args.input,
          body: bodyText(request?.body),
        });
        return next(args);
      },
      { step: 'finalizeRequest', name: 'captureRequests' },
    );
    network = await setUpEcsRunner(ecs, moto.endpoint, {
      cluster: CLUSTER,
      family: FAMILY,
      image: IMAGE,
      taskRoleArn: 'arn:aws:iam::123456789012:role/remote-worker-task',
    });
    await secretsManager.send(new CreateSecretCommand({ Name: 'db-admin', SecretString: SECRET_VALUE }));
    db = openDatabase(':memory:');
    store = new SqliteRunStore({ db });
    targets = new SqliteTargetStore({ db });
    // The launcher does not resolve runners: a VM with no connection material of its own keeps the
    // shared task definition. Material (SSH keys, minted logins) has its own test below.
    await targets.putTarget(vmTarget('vm-1', { cloud: 'local', address: '10.1.2.3' }));
    await targets.putTarget(vmTarget('vm-aws', { cloud: 'aws', address: '10.1.2.4' }));
    await targets.putTarget({
      id: 'db-aws',
      kind: 'database',
      cloud: 'aws',
      name: 'orders',
      engine: 'postgresql',
      endpoint: { host: 'orders.cluster-abc.eu-west-1.rds.amazonaws.com' },
      source: 'provisioned',
      credentialsRef: 'orders-admin',
      createdAt: new Date().toISOString(),
      updatedAt: new Date().toISOString(),
    });
    await secretsManager.send(new CreateSecretCommand({ Name: 'ssh-key', SecretString: SSH_KEY }));
    await secretsManager.send(
      new CreateSecretCommand({
        Name: 'orders-admin',
        SecretString: JSON.stringify({ username: 'postgres', password: DB_PASSWORD }),
      }),
    );
  }, 60_000);

  afterAll(async () => {
    db?.close();
    ecs?.destroy();
    secretsManager?.destroy();
    await moto?.stop();
  });

  it('starts one Fargate task per run and attempt, and adopts it when launched again', async () => {
    const run = dispatchingRun();
    const ecsLauncher = launcher();
    const before = runTaskInputs().length;

    const first = await ecsLauncher.launch({ run, image: IMAGE });
    // A redelivered dispatch of the same attempt. moto ignores clientToken, so only the ListTasks check prevents a second task.
    const second = await ecsLauncher.launch({ run, image: IMAGE });

    expect(second).toBe(first);
    expect(first).toMatch(new RegExp(`^ecs:${CLUSTER}/arn:aws:ecs:us-east-1:\\d+:task/${CLUSTER}/`));
    expect(runTaskInputs().length - before).toBe(1);
    expect(await tasksStartedBy(`rw/${run.id}/1`)).toEqual([first.slice(`ecs:${CLUSTER}/`.length)]);
  });

  it('adopts a task of the same attempt that already stopped instead of starting it again', async () => {
    const run = dispatchingRun();
    const ecsLauncher = launcher();
    const handle = await ecsLauncher.launch({ run, image: IMAGE });
    await ecsLauncher.cancel(handle, run, 30);
    const before = runTaskInputs().length;

    expect(await ecsLauncher.launch({ run, image: IMAGE })).toBe(handle);
    expect(runTaskInputs().length).toBe(before);
  });

  it('starts a new task for a new attempt', async () => {
    const run = dispatchingRun();
    const ecsLauncher = launcher();
    const first = await ecsLauncher.launch({ run, image: IMAGE });

    const next = await ecsLauncher.launch({ run: { ...run, attempt: 2 }, image: IMAGE });

    expect(next).not.toBe(first);
    expect(await tasksStartedBy(`rw/${run.id}/2`)).toHaveLength(1);
  });

  it('sends the idempotency key, run tags, network settings and the task spec override', async () => {
    const run = dispatchingRun({ extraVars: { greeting: 'hello from ECS' } });

    const handle = await launcher().launch({ run, image: IMAGE });

    const input = runTaskInputs().at(-1);
    expect(input).toMatchObject({
      cluster: CLUSTER,
      taskDefinition: FAMILY,
      launchType: 'FARGATE',
      count: 1,
      clientToken: `${run.id}#1`,
      startedBy: `rw/${run.id}/1`,
      group: `rw:${run.id}:1`,
      tags: [
        { key: RUN_ID_TAG, value: run.id },
        { key: 'remote-worker:attempt', value: '1' },
      ],
      networkConfiguration: {
        awsvpcConfiguration: {
          subnets: [network.subnet],
          securityGroups: [network.securityGroup],
          assignPublicIp: 'DISABLED',
        },
      },
    });
    expect(input?.clientToken?.length).toBeLessThanOrEqual(64);
    expect(input?.startedBy?.length).toBeLessThanOrEqual(36);
    const env = input?.overrides?.containerOverrides?.[0]?.environment ?? [];
    expect(input?.overrides?.containerOverrides?.[0]?.name).toBe('runner');
    expect(env.map((e) => e.name)).toEqual(['RW_TASK', 'RW_RUN_ID']);
    const spec = JSON.parse(env[0]?.value ?? '{}') as TaskSpec;
    expect(spec).toMatchObject({
      runId: run.id,
      kind: 'vm',
      assetType: 'playbook',
      extraVars: { greeting: 'hello from ECS' },
      secretVars: [],
      inventory: { all: { hosts: { 'vm-1': { ansible_host: '10.1.2.3' } } } },
    });

    // What ECS itself recorded for the task.
    const task = await describe1(handle);
    expect(task).toMatchObject({
      startedBy: `rw/${run.id}/1`,
      group: `rw:${run.id}:1`,
      launchType: 'FARGATE',
      tags: expect.arrayContaining([{ key: RUN_ID_TAG, value: run.id }]),
    });
  });

  it('hands the task a presigned GET for exactly its asset, which the task fetches and runs', async () => {
    const run = dispatchingRun({ extraVars: { greeting: 'fetched through S3' } });
    const handle = await launcher().launch({ run, image: IMAGE });

    const task = await describe1(handle);
    const env = task?.overrides?.containerOverrides?.[0]?.environment ?? [];
    const spec = JSON.parse(env.find((e) => e.name === 'RW_TASK')?.value ?? '{}') as TaskSpec;
    expect(spec.asset.kind).toBe('url');
    const url = new URL(spec.asset.kind === 'url' ? spec.asset.url : '');
    expect(url.pathname).toBe('/rw-assets/playbooks/hello/site.yml');
    // The start deadline (900 s) is cut to what is left of the run's 600-second deadline.
    expect(Number(url.searchParams.get('X-Amz-Expires'))).toBeGreaterThan(590);
    expect(Number(url.searchParams.get('X-Amz-Expires'))).toBeLessThanOrEqual(600);
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);

    const result = await runTaskOnLocalhost(spec);

    expect(result.code).toBe(0);
    expect(result.output).toContain('fetched through S3 from localhost');
    // The capability stays out of the task's own output.
    expect(result.output).not.toContain(url.searchParams.get('X-Amz-Signature'));
  });

  it('passes stored secrets only as references in a shared revision per content hash, registered once, never as a value', async () => {
    // Was: a per-run task definition for every run with a secret. Stored secrets now share one
    // revision per (task definition, references); only a run's own secrets get a revision of their own.
    const run = dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] });
    const ecsLauncher = launcher();
    const from = sent.length;

    const handle = await ecsLauncher.launch({ run, image: IMAGE, redelivery: false });

    const requests = sent.slice(from);
    for (const r of requests) {
      expect(JSON.stringify(r.input)).not.toContain(SECRET_VALUE);
      expect(r.body).not.toContain(SECRET_VALUE);
    }
    // The capture sees the wire: the override is there, the value is not.
    expect(requests.find((r) => r.command === 'RunTaskCommand')?.body).toContain('RW_TASK');
    const runTask = requests.find((r) => r.command === 'RunTaskCommand')?.input as RunTaskCommandInput;
    expect(runTask.taskDefinition).toMatch(/:task-definition\/remote-worker-run-shared-[0-9a-f]{16}:1$/);
    const spec = JSON.parse(runTask.overrides?.containerOverrides?.[0]?.environment?.[0]?.value ?? '{}');
    expect(spec.secretVars).toEqual([{ var: 'db_password', env: 'RW_SECRET_0' }]);

    const { taskDefinition } = await ecs.send(
      new DescribeTaskDefinitionCommand({ taskDefinition: runTask.taskDefinition }),
    );
    expect(taskDefinition?.containerDefinitions?.[0]?.secrets).toEqual([
      {
        name: 'RW_SECRET_0',
        valueFrom: expect.stringMatching(/^arn:aws:secretsmanager:us-east-1:\d+:secret:db-admin-/),
      },
    ]);
    expect(taskDefinition).toMatchObject({
      executionRoleArn: 'arn:aws:iam::123456789012:role/remote-worker-task-execution',
      taskRoleArn: 'arn:aws:iam::123456789012:role/remote-worker-task',
      cpu: '512',
      memory: '1024',
      networkMode: 'awsvpc',
    });

    // The next run with the same references, in this container and in a fresh one (a cold start),
    // reuses the revision: nothing is registered again, and a first delivery lists no tasks.
    const next = dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] });
    const later = sent.length;
    await ecsLauncher.launch({ run: next, image: IMAGE, redelivery: false });
    const coldStart = dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] });
    await launcher().launch({ run: coldStart, image: IMAGE, redelivery: false });
    const commands = sent.slice(later).map((r) => r.command);
    expect(commands.filter((c) => c === 'RegisterTaskDefinitionCommand')).toEqual([]);
    expect(commands.filter((c) => c === 'ListTasksCommand')).toEqual([]);
    expect(
      runTaskInputs()
        .slice(-2)
        .map((r) => r.taskDefinition),
    ).toEqual([runTask.taskDefinition, runTask.taskDefinition]);

    // Cleanup leaves the shared revision for the next run.
    await ecsLauncher.cleanup(handle, run);
    const { taskDefinition: still } = await ecs.send(
      new DescribeTaskDefinitionCommand({ taskDefinition: runTask.taskDefinition }),
    );
    expect(still?.status).toBe('ACTIVE');
  });

  it('registers no task definition for a run with submitted passwords: the task gets only their names (RW_SECRET_REFS)', async () => {
    // What item 1 changes: such a run used to get a task definition of its own, deregistered at cleanup.
    const run: Run = {
      ...dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] }),
      ephemeralSecrets: ['db_password'],
    };
    const ecsLauncher = launcher();
    const from = sent.length;

    const handle = await ecsLauncher.launch({ run, image: IMAGE, redelivery: false });
    const mine = sent.slice(from);
    expect(mine.map((r) => r.command)).not.toContain('RegisterTaskDefinitionCommand');
    expect((await describe1(handle))?.taskDefinitionArn).toMatch(new RegExp(`:task-definition/${FAMILY}:`));
    const input = runTaskInputs().at(-1);
    expect(input?.taskDefinition).toBe(FAMILY);
    const environment = input?.overrides?.containerOverrides?.[0]?.environment ?? [];
    const refs = environment.find((e) => e.name === 'RW_SECRET_REFS')?.value;
    expect(JSON.parse(refs ?? '{}')).toEqual({ RW_SECRET_0: 'db-admin' });
    for (const r of mine) expect(r.body).not.toContain(SECRET_VALUE);

    await ecsLauncher.cleanup(handle, run);
    const { taskDefinitionArns } = await ecs.send(
      new ListTaskDefinitionsCommand({ familyPrefix: `remote-worker-run-${run.id}` }),
    );
    expect(taskDefinitionArns).toEqual([]);
  });

  it('references an AWS VM’s SSH key by ARN and stores a minted login as a per-run secret, deleted at cleanup', async () => {
    const runSecrets = new SecretsManagerRunSecrets({ client: secretsManager, prefix: 'rw-test/runs/' });
    const prepare = (run: Run) =>
      prepareTask(
        {
          store,
          targets,
          assets,
          secrets: new SecretsManagerSecretSource({ client: secretsManager, ttlSeconds: 0 }),
          settings: loadSettings({ env: { ANSIBLE_SSH_KEY_SM_NAME: 'ssh-key' } }),
        },
        run,
        { resolveSecrets: false },
      );
    const from = sent.length;

    const vmRun = dispatchingRun({ targetId: 'vm-aws' });
    const vmHandle = await launcher({ prepare, runSecrets }).launch({ run: vmRun, image: IMAGE });
    const dbRun = dispatchingRun({ kind: 'database_play', targetId: 'db-aws' });
    const dbHandle = await launcher({ prepare, runSecrets }).launch({ run: dbRun, image: IMAGE });

    for (const r of sent.slice(from)) {
      expect(r.body).not.toContain(DB_PASSWORD);
      expect(r.body).not.toContain('BEGIN OPENSSH');
    }
    const secretsOf = async (handle: string) => {
      const task = await describe1(handle);
      const { taskDefinition } = await ecs.send(
        new DescribeTaskDefinitionCommand({ taskDefinition: task?.taskDefinitionArn }),
      );
      return taskDefinition?.containerDefinitions?.[0]?.secrets;
    };
    expect(await secretsOf(vmHandle)).toEqual([
      { name: 'RW_SSH_KEY', valueFrom: expect.stringMatching(/:secret:ssh-key-/) },
    ]);
    // The minted login is not in a task definition of the run's own: the task fetches it by ARN (RW_SECRET_REFS).
    expect(await secretsOf(dbHandle)).toBeUndefined();
    const dbEnv = runTaskInputs().at(-1)?.overrides?.containerOverrides?.[0]?.environment ?? [];
    const dbRefs = JSON.parse(dbEnv.find((e) => e.name === 'RW_SECRET_REFS')?.value ?? '{}');
    const dbSecret = { valueFrom: dbRefs.RW_DB_PASSWORD as string };
    expect(Object.keys(dbRefs)).toEqual(['RW_DB_PASSWORD']);
    expect(dbSecret.valueFrom).toContain(`:secret:rw-test/runs/${dbRun.id}/RW_DB_PASSWORD`);
    const minted = await secretsManager.send(new GetSecretValueCommand({ SecretId: dbSecret.valueFrom }));
    expect(minted.SecretString).toBe(DB_PASSWORD);

    await launcher({ prepare, runSecrets }).cleanup(dbHandle, dbRun);
    await expect(
      secretsManager.send(new GetSecretValueCommand({ SecretId: dbSecret?.valueFrom })),
    ).rejects.toThrow(/can't find|not found|ResourceNotFound/i);
    // Refused without a per-run store, naming what is missing, before anything starts.
    const before = runTaskInputs().length;
    const again = dispatchingRun({ kind: 'database_play', targetId: 'db-aws' });
    await expect(launcher({ prepare }).launch({ run: again, image: IMAGE })).rejects.toThrow(
      /needs RW_DB_PASSWORD minted at launch, but this ECS launcher has no per-run secret store/,
    );
    expect(runTaskInputs().length).toBe(before);
  });

  it('refuses a secret that does not exist, naming it, before anything is started', async () => {
    const run = dispatchingRun({ secrets: [{ var: 'db_password', secret: 'no-such-secret' }] });
    const before = runTaskInputs().length;

    await expect(launcher().launch({ run, image: IMAGE })).rejects.toThrow(LaunchRejectedError);
    await expect(launcher().launch({ run, image: IMAGE })).rejects.toThrow(/no-such-secret/);
    expect(runTaskInputs().length).toBe(before);
  });

  it('refuses a task spec that does not fit the 8,192-character overrides limit, counting it exactly', async () => {
    const ecsLauncher = launcher();
    const overhead = async () => {
      // Measure a run's override with an empty filler, then size the filler to land exactly on the limit.
      const probe = dispatchingRun({ extraVars: { filler: '' } });
      const prepared = await prepareTask(
        {
          store,
          targets,
          assets,
          secrets: { get: async () => '' },
        },
        probe,
      );
      const overrides = {
        containerOverrides: [
          {
            name: 'runner',
            environment: [
              { name: 'RW_TASK', value: JSON.stringify(prepared.spec) },
              { name: 'RW_RUN_ID', value: probe.id },
            ],
          },
        ],
      };
      return JSON.stringify(overrides).length;
    };
    const base = await overhead();
    const fits = dispatchingRun({ extraVars: { filler: 'x'.repeat(8192 - base) } });
    const tooBig = dispatchingRun({ extraVars: { filler: 'x'.repeat(8192 - base + 1) } });
    const before = runTaskInputs().length;

    await expect(ecsLauncher.launch({ run: fits, image: IMAGE })).resolves.toMatch(/^ecs:/);
    await expect(ecsLauncher.launch({ run: tooBig, image: IMAGE })).rejects.toThrow(
      new LaunchRejectedError(
        'task spec too large for ECS overrides (8193 chars > 8192); move extra vars to a file asset',
      ),
    );
    expect(runTaskInputs().length - before).toBe(1);
  });

  it('refuses an image with no task definition configured', async () => {
    await expect(launcher().launch({ run: dispatchingRun(), image: 'someone/else' })).rejects.toThrow(
      /No ECS task definition is configured for image someone\/else/,
    );
  });

  it('reports a running task, stops it with a reason on cancel, then reports it exited', async () => {
    const run = dispatchingRun();
    const ecsLauncher = launcher();
    const handle = await ecsLauncher.launch({ run, image: IMAGE });

    expect(await ecsLauncher.status(handle, run)).toEqual({ state: 'running' });
    await ecsLauncher.cancel(handle, run, 30);

    const stop = sent.filter((s) => s.command === 'StopTaskCommand').at(-1)?.input as
      | { cluster?: string; task?: string; reason?: string }
      | undefined;
    expect(stop).toMatchObject({ cluster: CLUSTER, task: handle.slice(`ecs:${CLUSTER}/`.length) });
    expect(String(stop?.reason)).toContain(run.id);
    expect(String(stop?.reason).length).toBeLessThanOrEqual(255);
    expect((await describe1(handle))?.desiredStatus).toBe('STOPPED');
    // moto: no stopCode and a made-up exit code 0 for the never-started container; on AWS
    // this is UserInitiated with the container's real code (see task-outcome.test.ts).
    expect(await ecsLauncher.status(handle, run)).toMatchObject({ state: 'exited' });
  });

  it('reports a task ECS does not know as missing', async () => {
    const run = dispatchingRun();
    const handle = `ecs:${CLUSTER}/arn:aws:ecs:us-east-1:123456789012:task/${CLUSTER}/0123456789abcdef`;

    expect(await launcher().status(handle, run)).toMatchObject({
      state: 'missing',
      reason: expect.stringContaining('ECS no longer knows task'),
    });
  });

  it('maps a refused request to LaunchRejectedError and an unreachable endpoint to LauncherUnavailableError', async () => {
    const run = dispatchingRun();
    await expect(launcher({ cluster: 'no-such-cluster' }).launch({ run, image: IMAGE })).rejects.toThrow(
      LaunchRejectedError,
    );

    const offline = new ECSClient({ ...moto.clientConfig(), endpoint: 'http://127.0.0.1:9' });
    try {
      await expect(launcher({ ecs: offline }).launch({ run, image: IMAGE })).rejects.toThrow(
        LauncherUnavailableError,
      );
    } finally {
      offline.destroy();
    }
  });

  it('registers no task definition of the run’s own when ECS refuses the RunTask for good', async () => {
    const refusing = new ECSClient(moto.clientConfig());
    refusing.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'RunTaskCommand') {
          throw new ClientException({
            message: 'No Container Instances were found',
            $metadata: { httpStatusCode: 400 },
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'refuseRunTask' },
    );
    // A run with its own secrets (a submitted password): it used to get a revision, deregistered here.
    const run: Run = {
      ...dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] }),
      ephemeralSecrets: ['db_password'],
    };
    try {
      await expect(launcher({ ecs: refusing }).launch({ run, image: IMAGE })).rejects.toThrow(
        LaunchRejectedError,
      );
    } finally {
      refusing.destroy();
    }

    const family = `remote-worker-run-${run.id}`;
    const active = await ecs.send(new ListTaskDefinitionsCommand({ familyPrefix: family, status: 'ACTIVE' }));
    const inactive = await ecs.send(
      new ListTaskDefinitionsCommand({ familyPrefix: family, status: 'INACTIVE' }),
    );
    expect(active.taskDefinitionArns).toEqual([]);
    expect(inactive.taskDefinitionArns).toEqual([]);
  });

  it('lets the status sweep adopt a running task and forward a cancel request as StopTask', async () => {
    const clock = new ManualClock(new Date().toISOString());
    const sweepStore = new SqliteRunStore({ db, clock });
    const ecsLauncher = launcher();
    const queued = await createQueuedRun(sweepStore, clock, { id: newId(), targetId: 'vm-1' });
    // The dispatcher launched it for real, then died before recording anything but the handle.
    const handle = await ecsLauncher.launch({ run: { ...queued, attempt: 1 }, image: IMAGE });
    await markLaunched(sweepStore, clock, queued, { backend: 'ecs', handle });
    const deps = { store: sweepStore, launchers: { ecs: ecsLauncher }, clock, logger: silentLogger() };
    clock.advance(120_000);

    const first = await syncBackends(deps, { staleAfterSeconds: 60, missingGraceSeconds: 300 });

    expect(first.advanced).toEqual([queued.id]);
    expect((await sweepStore.getRun(queued.id))?.state).toBe('running');

    await cancelRun({ store: sweepStore, clock }, queued.id);
    const second = await syncBackends(deps, { staleAfterSeconds: 60, missingGraceSeconds: 300 });

    expect(second.stopped).toEqual([queued.id]);
    expect((await describe1(handle))?.desiredStatus).toBe('STOPPED');
    // moto reports the stopped task with exit code 0 and no stop code, which reads as success; on ECS the
    // container's real code arrives with stopCode UserInitiated and the run ends cancelled.
    const third = await syncBackends(deps, { staleAfterSeconds: 60, missingGraceSeconds: 300 });
    expect(third.settled).toEqual([queued.id]);
  });
});
