import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { ECSClient } from '@aws-sdk/client-ecs';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EcsTaskStateChangeEvent } from '../../functions/status-sync/ecs-task-state-change.ts';
import { parseEcsHandle } from '../../shared/adapters/ecs/handle.ts';
import { EcsTaskStandIn } from '../../tools/ecs-task-stand-in/stand-in.ts';
import { useMoto } from '../support/moto.ts';
import { ACCOUNT, type AccountCredentials, awsConfig, UNCHECKED } from './deployed-stack/aws-config.ts';
import { buildBundles } from './deployed-stack/bundles.ts';
import { bootstrapLikeCdk, type DeployedStack, deployStack, forMoto } from './deployed-stack/deploy.ts';
import { IamDecisions, sessionOf } from './deployed-stack/iam-decisions.ts';
import { assumeRoles, createAdmin, enforceIam } from './deployed-stack/identities.ts';
import { motoDefaultNetwork } from './deployed-stack/network.ts';
import { PathStepError, StackHarness } from './deployed-stack/stack-harness.ts';
import {
  devTemplate,
  eventSourceQueues,
  policyStatements,
  queueArnOf,
  withoutGrant,
} from './deployed-stack/template.ts';
import { REPO } from './harness.ts';

/*
 * The dev stack as deployed: `cdk synth`'s template created by moto's
 * CloudFormation, each function's bundle run in its own Node process with the
 * environment the stack gives it and credentials of its own role (sts:AssumeRole),
 * with moto's IAM enforcement on — patched in test/support/moto_enforcing.py to
 * check resource ARNs for DynamoDB, ECS, Secrets Manager and CloudWatch Logs
 * (and to record every decision). The ECS task stand-in plays ECS: it runs the
 * task shim and the real ansible-playbook, fetching secrets and writing the
 * awslogs stream with the task execution role, and delivers the task events to
 * the status-sync function as the EventBridge rule would.
 *
 * What moto and this harness do not check (the reasons are in moto_enforcing.py):
 * API Gateway (moto's CloudFormation skips the HTTP API: routes, the IAM
 * authorizer and throttling are not exercised; events carry the caller the
 * authorizer would put there); resource-based policies (queue and bucket
 * policies are skipped on create; Lambda permissions for EventBridge and API
 * Gateway are never consulted); conditions in identity policies (ecs:cluster,
 * ecs:CreateAction, iam:PassedToService); iam:PassRole on RunTask and
 * RegisterTaskDefinition; KMS; event source mappings, rules and Lambda's own
 * retries (run here by the harness, with the functions' roles where Lambda
 * would use them). The functions' own log groups are not written (their
 * output is kept in memory).
 */

/** Every function the path calls, by construct id. */
const PATH_FUNCTIONS = [
  'UploadAsset',
  'PutTarget',
  'SubmitRun',
  'DispatchRuns',
  'EcsTaskStateChange',
  'GetRun',
  'GetRunLogs',
  'CancelRun',
  'SettleDeadLetters',
  'ReconcileRuns',
] as const;
const BROKEN_FUNCTIONS = ['UploadAsset', 'PutTarget', 'SubmitRun', 'DispatchRuns'] as const;
const BROKEN_PREFIX = 'broken-';
/** The SSH key AWS VM runs carry (cdk.json dev: ansible_ssh_key_sm_name); it must reach the task and no log. */
const SSH_KEY_NAME = 'remote-worker/dev/ssh-key';
const SSH_KEY_VALUE = 'deployed-stack-ssh-key-canary-7f3a';
const TARGET = { kind: 'vm', cloud: 'aws', name: 'app-1', address: '127.0.0.1', connection: 'local' };

const scratch = mkdtempSync(join(tmpdir(), 'rw-deployed-stack-'));
const decisions = new IamDecisions(join(scratch, 'iam-decisions.jsonl'));
const moto = useMoto({
  script: join(REPO, 'test/support/moto_enforcing.py'),
  env: { MOTO_ACCOUNT_ID: ACCOUNT, RW_IAM_DECISIONS: join(scratch, 'iam-decisions.jsonl') },
});

let stack: DeployedStack;
let broken: DeployedStack;
let aws: StackHarness;
let brokenAws: StackHarness;
let standIn: EcsTaskStandIn;
const standInClients: { destroy(): void }[] = [];
/** Events the stand-in could not deliver (after its retries): a failed status sync says so here. */
const undelivered: string[] = [];
const timings: Record<string, number> = {};

async function timed<T>(name: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await work();
  } finally {
    timings[name] = Date.now() - started;
  }
}

/** Upload the example playbooks and register the target through the functions, as a user would. */
async function seedThroughApi(harness: StackHarness): Promise<void> {
  for (const name of ['site.yml', 'slow.yml']) {
    const upload = await harness.api('POST /assets', '/assets', {
      body: {
        path: `hello/${name}`,
        contentBase64: readFileSync(join(REPO, 'examples/playbooks/hello', name)).toString('base64'),
      },
    });
    expect(upload.statusCode, JSON.stringify(upload.body)).toBe(201);
  }
  const put = await harness.api('PUT /targets/{id}', '/targets/app-1', {
    pathParameters: { id: 'app-1' },
    body: TARGET,
  });
  expect([200, 201], JSON.stringify(put.body)).toContain(put.statusCode);
}

async function submit(harness: StackHarness, request: Record<string, unknown>): Promise<string> {
  const submitted = await harness.api('POST /runs', '/runs', { body: request });
  expect(submitted.statusCode, JSON.stringify(submitted.body)).toBe(202);
  expect(submitted.body).toMatchObject({ state: 'queued', runner: 'ecs' });
  return submitted.body.id;
}

/** One poll of the dispatcher's event source mapping, which must hand over this run's message and succeed. */
async function dispatch(harness: StackHarness, runId: string): Promise<void> {
  const [queue] = eventSourceQueues(harness.stack, 'DispatchRuns');
  if (queue === undefined) throw new Error('DispatchRuns has no event source mapping in the template');
  const { messages, failures } = await harness.deliverFromQueue('DispatchRuns', queue.url, queue.arn);
  expect(messages.map((m) => JSON.parse(m.Body ?? '{}').runId)).toEqual([runId]);
  expect(failures).toEqual([]);
}

async function getRun(harness: StackHarness, id: string): Promise<any> {
  const answer = await harness.api('GET /runs/{id}', `/runs/${id}`, { pathParameters: { id } });
  expect(answer.statusCode).toBe(200);
  return answer.body;
}

const TERMINAL = ['succeeded', 'failed', 'cancelled', 'timed_out', 'refused'];

async function waitForRun(id: string, until: (run: any) => boolean, timeoutMs: number): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let run = await getRun(aws, id);
  while (!until(run) && Date.now() < deadline) {
    await sleep(300);
    run = await getRun(aws, id);
  }
  if (!until(run)) {
    throw new Error(
      `run ${id} is ${run.state} after ${timeoutMs} ms${undelivered.length > 0 ? `; undelivered task events:\n${undelivered.join('\n')}` : ''}`,
    );
  }
  return run;
}

async function allLogs(id: string): Promise<string> {
  const page = await aws.api('GET /runs/{id}/logs', `/runs/${id}/logs`, { pathParameters: { id } });
  expect(page.statusCode, JSON.stringify(page.body)).toBe(200);
  return (page.body.lines as { text: string }[]).map((l) => l.text).join('\n');
}

/** Until S3 assets reach ECS tasks as presigned URLs, the shim refuses an s3:// location with 125: say so. */
async function expectThePlayRan(run: { id: string; exitCode?: number }): Promise<string> {
  const logs = await allLogs(run.id);
  if (run.exitCode === 125 && /asset URL must be http or https, not s3:/.test(logs)) {
    throw new Error(
      'The asset did not reach the ECS task: the task shim got an s3:// URL, not a presigned one',
    );
  }
  expect(logs).toContain('remote-worker: running ansible-playbook');
  return logs;
}

beforeAll(async () => {
  const endpoint = moto().endpoint;
  const network = await motoDefaultNetwork(endpoint);
  const bundles = timed('bundle', () => buildBundles(PATH_FUNCTIONS, join(scratch, 'bundles')));
  const template = await timed('synth', async () => forMoto(devTemplate(network)));
  await bootstrapLikeCdk(endpoint, UNCHECKED, template);
  await timed('deploy', async () => {
    // The broken copy first: both register the same task definition families, and the
    // stack under test must own the latest revisions its RunTask grant names.
    broken = await deployStack(
      endpoint,
      UNCHECKED,
      'RemoteWorker-dev-broken',
      withoutGrant(template, brokenRole(template), 'ecs:RunTask'),
    );
    stack = await deployStack(endpoint, UNCHECKED, 'RemoteWorker-dev', template);
  });

  const secrets = new SecretsManagerClient(awsConfig(endpoint, UNCHECKED));
  await secrets.send(new CreateSecretCommand({ Name: SSH_KEY_NAME, SecretString: SSH_KEY_VALUE }));
  secrets.destroy();

  const admin = await createAdmin(endpoint, 'deployed-stack-operator');
  const executionRoleArn = stack.functions.DispatchRuns?.environment.ANSIBLE_ECS_EXECUTION_ROLE_ARN ?? '';
  const roles = await assumeRoles(endpoint, {
    ...Object.fromEntries(PATH_FUNCTIONS.map((id) => [id, stack.functions[id]?.roleArn ?? ''])),
    ...Object.fromEntries(
      BROKEN_FUNCTIONS.map((id) => [`${BROKEN_PREFIX}${id}`, broken.functions[id]?.roleArn ?? '']),
    ),
    RunnerTaskExecution: executionRoleArn,
  });
  const built = await bundles;
  await enforceIam(endpoint);

  aws = new StackHarness({
    endpoint,
    stack,
    bundles: built,
    credentials: roles,
    decisions,
    callerArn: admin.arn,
  });
  const brokenRoles: Record<string, AccountCredentials> = {};
  for (const id of BROKEN_FUNCTIONS) brokenRoles[id] = roles[`${BROKEN_PREFIX}${id}`] as AccountCredentials;
  brokenAws = new StackHarness({
    endpoint,
    stack: broken,
    bundles: built,
    credentials: brokenRoles,
    decisions,
    callerArn: admin.arn,
  });

  // ECS itself (admin) watches the cluster; the ECS agent's work — secrets, awslogs — uses the execution role.
  const executionRole = roles.RunnerTaskExecution as AccountCredentials;
  const ecs = new ECSClient(awsConfig(endpoint, admin));
  const secretsManager = new SecretsManagerClient(awsConfig(endpoint, executionRole));
  const logs = new CloudWatchLogsClient(awsConfig(endpoint, executionRole));
  standInClients.push(ecs, secretsManager, logs);
  standIn = new EcsTaskStandIn({
    ecs,
    secretsManager,
    logs,
    cluster: stack.outputs.RunnerClusterName ?? '',
    region: 'eu-west-1',
    motoEndpoint: endpoint,
    maxStopTimeoutSeconds: 10,
    deliver: async (event: EcsTaskStateChangeEvent) => {
      try {
        return await aws.invoke('EcsTaskStateChange', event);
      } catch (error) {
        undelivered.push((error as Error).message);
        throw error;
      }
    },
  });
  await standIn.start();

  await timed('seed through the API', () => seedThroughApi(aws));
}, 180_000);

afterAll(async () => {
  await standIn?.stop();
  for (const client of standInClients) client.destroy();
  await aws?.stop();
  await brokenAws?.stop();
  if (process.env.RW_KEEP_SCRATCH === undefined) rmSync(scratch, { recursive: true, force: true });
  else console.info('scratch kept:', scratch);
  console.info('deployed-stack timings (ms):', timings);
}, 60_000);

/** The role of the dispatcher, whose RunTask grant the broken copy loses. */
function brokenRole(template: {
  Resources: Record<string, { Type: string; Properties?: any; Metadata?: any }>;
}) {
  const [logicalId] = Object.entries(template.Resources).find(
    ([, r]) =>
      r.Type === 'AWS::IAM::Role' && String(r.Metadata?.['aws:cdk:path']).includes('/DispatchRuns/Role/'),
  ) ?? [''];
  return logicalId;
}

describe('the deployed dev stack on moto, every function under its own role with IAM enforced', () => {
  it('runs a playbook on ECS: submit, dispatch from the queue, RunTask, the task, its events, the run and its logs', async () => {
    const started = Date.now();
    const id = await submit(aws, {
      kind: 'vm',
      targetId: 'app-1',
      asset: 'hello/site.yml',
      extraVars: { greeting: 'hi from the stack' },
    });
    await dispatch(aws, id);

    const run = await waitForRun(id, (r) => TERMINAL.includes(r.state), 60_000);
    const logs = await expectThePlayRan(run);

    expect(run).toMatchObject({ state: 'succeeded', exitCode: 0, runner: 'ecs' });
    expect(run.history.map((h: { state: string }) => h.state)).toEqual([
      'queued',
      'dispatching',
      'launched',
      'running',
      'succeeded',
    ]);
    expect(logs).toContain('hi from the stack from app-1');
    expect(logs).not.toContain(SSH_KEY_VALUE);
    timings.success = Date.now() - started;
  }, 90_000);

  it('cancels a running run: the cancel reaches the task, which stops, and the run ends cancelled', async () => {
    const started = Date.now();
    const id = await submit(aws, {
      kind: 'vm',
      targetId: 'app-1',
      asset: 'hello/slow.yml',
      extraVars: { seconds: 120 },
    });
    await dispatch(aws, id);
    await waitForRun(id, (r) => r.state === 'running' || TERMINAL.includes(r.state), 60_000);

    const cancel = await aws.api('POST /runs/{id}/cancel', `/runs/${id}/cancel`, { pathParameters: { id } });
    const run = await waitForRun(id, (r) => TERMINAL.includes(r.state), 30_000);

    expect(cancel.statusCode).toBe(202);
    expect(run).toMatchObject({ state: 'cancelled' });
    // Stopped by CancelRun's StopTask (the stand-in saw the task's desired status turn STOPPED), not by its end.
    const taskArn = parseEcsHandle(run.launch?.handle)?.taskArn ?? '';
    expect(standIn.outcome(taskArn)).toMatchObject({ stopCode: 'UserInitiated' });
    timings.cancel = Date.now() - started;
  }, 120_000);

  it('fails a run whose dispatch message reached the dead-letter queue, with the reason', async () => {
    const started = Date.now();
    const id = await submit(aws, { kind: 'vm', targetId: 'app-1', asset: 'hello/site.yml' });
    const [queue] = eventSourceQueues(stack, 'DispatchRuns');
    const [dlq] = eventSourceQueues(stack, 'SettleDeadLetters').filter((q) => q.url.includes('DispatchDlq'));
    if (queue === undefined || dlq === undefined)
      throw new Error('the template has no dispatch queue or its DLQ source');

    // A dispatcher that never finishes (each invocation timing out): the mapping receives the
    // message again after every visibility timeout — made 0 here — until SQS dead-letters it.
    let moved: Awaited<ReturnType<StackHarness['receive']>> = [];
    for (let receives = 0; receives < 12 && moved.length === 0; receives += 1) {
      await aws.receive('DispatchRuns', queue.url, { visibilityTimeout: 0, waitSeconds: 0 });
      moved = await aws.receive('SettleDeadLetters', dlq.url, { visibilityTimeout: 0, waitSeconds: 0 });
    }
    expect(moved.map((m) => JSON.parse(m.Body ?? '{}').runId)).toEqual([id]);
    // The settler logs each run it fails at ERROR on purpose: the alarms count those lines.
    const settled = await aws.deliverFromQueue('SettleDeadLetters', dlq.url, queueArnOf(dlq.url), {
      expectedErrorLog: /"message":"run failed from the dead-letter queue"/,
    });
    const run = await getRun(aws, id);

    expect(settled.failures).toEqual([]);
    expect(run).toMatchObject({ state: 'failed' });
    // The stack's redrive limit (dispatch_max_receive_count, default 5) is what the settler quotes.
    expect(run.reason).toBe(
      'Delivery failed 5 times in a row; the message was moved to the dead-letter queue (see the service log for each error)',
    );
    timings.deadLetter = Date.now() - started;
  }, 60_000);

  it("runs the reconciler's scheduled sweep under its role", async () => {
    const rule = Object.keys(stack.template.Resources).find((k) => k.startsWith('EventsReconcileSchedule'));
    await aws.invoke('ReconcileRuns', aws.scheduled(`arn:aws:events:eu-west-1:${ACCOUNT}:rule/${rule}`));
  }, 60_000);

  it('exercised every function of the path, each with its own role, and reports how much of the policies it used', () => {
    const good = decisions
      .all()
      .filter(
        (d) => d.principal.includes(':assumed-role/') && !sessionOf(d.principal).startsWith(BROKEN_PREFIX),
      );
    const callers = new Set(good.map((d) => sessionOf(d.principal)));
    const used = new Set(
      good.flatMap((d) => (d.statements ?? []).map(([policy, index]) => `${policy}#${index}`)),
    );
    const all = policyStatements(stack.template);

    expect(Object.keys(aws.invoked()).sort()).toEqual([...PATH_FUNCTIONS].sort());
    expect([...callers].sort()).toEqual([...PATH_FUNCTIONS, 'RunnerTaskExecution'].sort());
    for (const d of good) {
      // Each function called AWS with its own role's credentials, never another's.
      expect(d.principal).toContain(`:assumed-role/${roleNameOf(sessionOf(d.principal))}/`);
    }
    console.info(
      `deployed-stack: ${PATH_FUNCTIONS.length} of ${Object.keys(stack.functions).length} functions invoked ` +
        `(${Object.values(aws.invoked()).reduce((a, b) => a + b, 0)} invocations); ` +
        `${used.size} of ${all.length} policy statements allowed a call; ` +
        `${good.filter((d) => d.decision === 'allow').length} calls checked under function or task roles`,
    );
    expect(used.size).toBeGreaterThan(0);
    // The SSH key reached the task (as a secret reference), and no function printed it.
    for (const id of PATH_FUNCTIONS) expect(aws.container(id).output()).not.toContain(SSH_KEY_VALUE);
  });

  it('fails, naming the denied call, when the dispatcher role has lost its ecs:RunTask grant', async () => {
    const started = Date.now();
    await seedThroughApi(brokenAws);
    const id = await submit(brokenAws, { kind: 'vm', targetId: 'app-1', asset: 'hello/site.yml' });

    const failure = await dispatch(brokenAws, id).then(
      () => undefined,
      (error: unknown) => error,
    );

    expect(failure).toBeInstanceOf(PathStepError);
    expect((failure as Error).message).toMatch(
      /broken-DispatchRuns \(arn:aws:sts::111111111111:assumed-role\/RemoteWorker-dev-broken-DispatchRunsRole[^)]*\) was denied ecs:RunTask on arn:aws:ecs:eu-west-1:111111111111:task-definition\/remote-worker-dev-/,
    );
    timings.brokenGrant = Date.now() - started;
  }, 60_000);
});

/** The role name of a session (a function's construct id or the runner execution role). */
function roleNameOf(session: string): string {
  const arn =
    session === 'RunnerTaskExecution'
      ? stack.functions.DispatchRuns?.environment.ANSIBLE_ECS_EXECUTION_ROLE_ARN
      : stack.functions[session]?.roleArn;
  return arn?.split('/').at(-1) ?? '';
}
