import { inspect } from 'node:util';
import { OAuth2Client } from 'google-auth-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionsClient, JobsClient, TasksClient } from '../../shared/adapters/cloud-run/clients.ts';
import {
  type CloudRunLauncherOptions,
  cloudRunOptionsFromSettings,
} from '../../shared/adapters/cloud-run/config.ts';
import {
  cloudRunJobId,
  formatCloudRunHandle,
  JOB_ID_MAX,
  parseCloudRunHandle,
} from '../../shared/adapters/cloud-run/handle.ts';
import { CloudRunLauncher } from '../../shared/adapters/cloud-run/launcher.ts';
import type { GcsAssetStore } from '../../shared/adapters/gcs/asset-store.ts';
import { openDatabase, type SqliteDatabase } from '../../shared/adapters/sqlite/database.ts';
import { SqliteRunStore } from '../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../shared/adapters/sqlite/target-store.ts';
import { prepareTask } from '../../shared/app/task-prep.ts';
import { loadSettings } from '../../shared/config/settings.ts';
import { LauncherUnavailableError, LaunchRejectedError } from '../../shared/domain/errors.ts';
import { newRun, type Run, type SecretBinding, transition } from '../../shared/domain/run.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import { newId } from '../../shared/lib/ids.ts';
import type { PreparedTask } from '../../shared/ports/launcher.ts';
import { LOG_PAGE_MAX_LINES, type LogLine } from '../../shared/ports/log-store.ts';
import { exampleAssets, gcsAssetStore, gcsSigner } from '../support/asset-stores.ts';
import { type FakeCloudRun, startFakeCloudRun } from '../support/fake-cloud-run.ts';
import { type FakeGcs, startFakeGcs } from '../support/fake-gcs.ts';
import { runTaskOnLocalhost } from '../support/task-run.ts';
import { vmTarget } from '../unit/app/harness.ts';

/**
 * CloudRunLauncher with the real `@google-cloud/run` v2 clients (REST
 * transport) and a real `google-auth-library` OAuth2Client against a loopback
 * fake (test/support/fake-cloud-run.ts). Where the fake differs from Google:
 * - one server plays Cloud Run, Cloud Logging and Secret Manager, over plain
 *   http, with one fixed bearer token and no IAM;
 * - operations: CreateJob and DeleteJob answer `done: true` at once (Cloud
 *   Run takes seconds); RunJob's operation stays not done until the test
 *   drives the execution to an end; cancel takes effect at once (Cloud Run
 *   passes through a CANCELLING reason and only then marks it cancelled);
 * - executions do nothing by themselves: the test moves them pending →
 *   running → succeeded / failed with an exit code; there is no task retry,
 *   no timeout and no container; the failed condition's wording is the
 *   fake's; CancelExecution on a finished execution answers 400
 *   FAILED_PRECONDITION (the real wording is unknown, so the launcher checks
 *   the execution rather than the error);
 * - enums are answered as names, even though the client asks for numbers
 *   (`$alt=json;enum-encoding=int`); the client decodes both;
 * - CreateJob validates only the job id, the image, and env value / size;
 *   a secret reference is checked when the job runs (an execution whose
 *   secret has no version fails at once), not against IAM;
 * - Cloud Logging: entries appear the moment they are appended (no ingestion
 *   delay); the filter supports only `field op "value"` joined by AND / OR
 *   with parentheses; insertIds are increasing unless a test sets them;
 *   page tokens are offsets;
 * - Secret Manager: secret names carry the project id (Google answers the
 *   project number); TTL, replication and versions' states are recorded, not
 *   enforced; the list filter supports one `labels.k=v`;
 * - nothing is ever throttled or unavailable unless `failNext` says so.
 */

const PROJECT = 'rw-test-project';
const REGION = 'europe-west1';
const IMAGE = 'europe-docker.pkg.dev/rw/runners/ansible-cloud:1';
/** A token-prepared kubeconfig minted for the run: must only ever reach Secret Manager's addVersion. */
const MINTED = 'apiVersion: v1\nusers:\n- user:\n    token: minted-canary-8d41f0c2\n';
const MINTED_MARK = 'minted-canary-8d41f0c2';
const MINTED_B64 = Buffer.from(MINTED, 'utf8').toString('base64');
/** Stored secrets' values live only in the fake's Secret Manager; the launcher must never see them. */
const STORED = 'stored-canary-1b9e77aa';
const STORED_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nssh-key-canary-77c2\n';

describe('CloudRunLauncher against a loopback Cloud Run', () => {
  let fake: FakeCloudRun;
  /** Assets on the GCS fake: a Cloud Run task reads its asset through a V4 signed URL. */
  let gcs: FakeGcs;
  let assets: GcsAssetStore;
  let auth: OAuth2Client;
  let jobs: JobsClient;
  let executions: ExecutionsClient;
  let tasks: TasksClient;
  let db: SqliteDatabase;
  let store: SqliteRunStore;
  let targets: SqliteTargetStore;

  const settings = () =>
    cloudRunOptionsFromSettings(
      loadSettings({
        env: {
          GCP_PROJECT_ID: PROJECT,
          GCP_REGION: 'us-central1',
          GCP_ANSIBLE_CLOUD_RUN_REGION: REGION,
          GCP_ANSIBLE_VPC_CONNECTOR: 'rw-connector',
        },
      }),
    );

  /** What the composition root would pass: stored secrets unresolved, plus material minted for the run. */
  const prepare = async (run: Run): Promise<PreparedTask> => {
    const prepared = await prepareTask(
      {
        // A GCP VM over SSH: its key is the stored secret named by gcp_ssh_key_secret_name.
        settings: loadSettings({ env: { GCP_SSH_KEY_SECRET_NAME: 'vm-ssh-key' } }),
        store,
        targets,
        assets,
        secrets: { get: (name) => Promise.reject(new Error(`the Cloud Run launcher must not read ${name}`)) },
      },
      run,
      { resolveSecrets: false },
    );
    return {
      spec: { ...prepared.spec, secretEnvNames: ['KUBECONFIG'] },
      secretEnv: { ...prepared.secretEnv, KUBECONFIG: MINTED },
      secretRefs: prepared.secretRefs,
    };
  };

  const launcher = (overrides: Partial<CloudRunLauncherOptions> = {}, { withTasks = true } = {}) =>
    new CloudRunLauncher({
      ...settings(),
      jobs,
      executions,
      ...(withTasks ? { tasks } : {}),
      http: auth,
      prepare,
      loggingEndpoint: fake.endpoint,
      secretManagerEndpoint: fake.endpoint,
      retry: { baseMs: 1, maxMs: 2 },
      ...overrides,
    });

  /** A run as the dispatcher hands it over: claimed, attempt 1. */
  const dispatchingRun = (
    input: { secrets?: SecretBinding[]; attempt?: number; filler?: string } = {},
  ): Run => {
    const draft = newRun(
      {
        id: newId(),
        kind: 'vm',
        targetId: 'vm-1',
        asset: 'hello/site.yml',
        extraVars: { greeting: 'hi', ...(input.filler === undefined ? {} : { filler: input.filler }) },
        secrets: input.secrets ?? [{ var: 'db_password', secret: 'db-admin' }],
        requestedBy: 'alice',
        timeoutSeconds: 600,
      },
      new Date().toISOString(),
    );
    return transition(draft, 'dispatching', new Date().toISOString(), {
      patch: { attempt: input.attempt ?? 1, owner: 'dispatcher:test', runner: 'gcp', image: IMAGE },
    });
  };

  const executionOf = (handle: string): string => {
    const h = parseCloudRunHandle(handle);
    if (h === undefined) throw new Error(`not a handle: ${handle}`);
    return `projects/${h.project}/locations/${h.region}/jobs/${h.jobId}/executions/${h.executionId}`;
  };
  const jobIdOf = (run: Run) => cloudRunJobId({ runId: run.id, attempt: run.attempt });
  const calls = (action: string, jobId?: string) =>
    fake.requests.filter((r) => r.action === action && (jobId === undefined || r.path.includes(`/${jobId}`)));

  beforeAll(async () => {
    const signer = gcsSigner();
    gcs = await startFakeGcs({ signer: { clientEmail: signer.clientEmail, publicKey: signer.publicKey } });
    assets = gcsAssetStore(gcs, signer, 'rw-assets', exampleAssets('hello/site.yml'));
    fake = await startFakeCloudRun();
    fake.seedSecret('db-admin', STORED);
    fake.seedSecret('vm-ssh-key', STORED_KEY);
    auth = new OAuth2Client();
    auth.setCredentials({ access_token: fake.token, expiry_date: Date.now() + 3_600_000 });
    const client = {
      apiEndpoint: fake.host,
      port: fake.port,
      protocol: 'http',
      fallback: true,
      authClient: auth,
    };
    jobs = new JobsClient(client);
    executions = new ExecutionsClient(client);
    tasks = new TasksClient(client);
    db = openDatabase(':memory:');
    store = new SqliteRunStore({ db });
    targets = new SqliteTargetStore({ db });
    await targets.putTarget(vmTarget('vm-1', { cloud: 'gcp', address: '10.1.2.3' }));
  });

  afterAll(async () => {
    await Promise.all([jobs?.close(), executions?.close(), tasks?.close()]);
    db?.close();
    await fake?.close();
    await gcs?.close();
  });

  it('creates one job per run and attempt with maxRetries 0, the spec, VPC access and secret references, and runs it once', async () => {
    const run = dispatchingRun();
    const jobId = jobIdOf(run);

    const handle = await launcher().launch({ run, image: IMAGE });

    const h = parseCloudRunHandle(handle);
    expect(h).toMatchObject({ project: PROJECT, region: REGION, jobId });
    expect(h?.executionId).toMatch(new RegExp(`^${jobId}-[a-z0-9]{5}$`));
    expect(handle).toBe(`gcp:${PROJECT}/${REGION}/${jobId}/${h?.executionId}`);
    const create = calls('createJob').find((r) => r.query.jobId === jobId);
    expect(create?.path).toBe(`/v2/projects/${PROJECT}/locations/${REGION}/jobs`);
    // The wire body, as Cloud Run receives it (proto3 JSON: Duration as "600s", enums as numbers).
    const job = JSON.parse(create?.body ?? '{}');
    expect(job.labels).toEqual({
      remote_worker_run_id: run.id.toLowerCase(),
      remote_worker_attempt: '1',
      remote_worker_job: jobId,
    });
    expect(job.template).toMatchObject({ taskCount: 1, labels: job.labels });
    const template = job.template.template;
    expect(template.maxRetries).toBe(0);
    expect(template.timeout).toBe('600s');
    expect(template.vpcAccess).toEqual({
      connector: `projects/${PROJECT}/locations/${REGION}/connectors/rw-connector`,
      egress: 2, // PRIVATE_RANGES_ONLY
    });
    const [container] = template.containers;
    expect(container.image).toBe(IMAGE);
    const env = Object.fromEntries(container.env.map((e: any) => [e.name, e]));
    expect(Object.keys(env)).toEqual(['RW_TASK', 'RW_RUN_ID', 'KUBECONFIG', 'RW_SECRET_0', 'RW_SSH_KEY']);
    expect(env.RW_RUN_ID).toEqual({ name: 'RW_RUN_ID', value: run.id });
    const spec = JSON.parse(env.RW_TASK.value) as TaskSpec;
    expect(spec).toMatchObject({
      runId: run.id,
      assetType: 'playbook',
      secretVars: [{ var: 'db_password', env: 'RW_SECRET_0' }],
      secretEnvNames: ['KUBECONFIG'],
      sshKeyEnv: 'RW_SSH_KEY',
      inventory: { all: { hosts: { 'vm-1': { ansible_host: '10.1.2.3' } } } },
    });
    // The asset is a V4 signed read URL for that one object, which the task fetches and runs.
    const signed = new URL(spec.asset.kind === 'url' ? spec.asset.url : '');
    expect(signed.pathname).toBe('/rw-assets/playbooks/hello/site.yml');
    expect(signed.searchParams.get('X-Goog-Algorithm')).toBe('GOOG4-RSA-SHA256');
    const task = await runTaskOnLocalhost(spec);
    expect(task.code).toBe(0);
    expect(task.output).toMatch(/from localhost/);
    expect(task.output).not.toContain(signed.searchParams.get('X-Goog-Signature'));
    expect(env.RW_SECRET_0.valueSource).toEqual({ secretKeyRef: { secret: 'db-admin', version: 'latest' } });
    expect(env.RW_SSH_KEY.valueSource).toEqual({ secretKeyRef: { secret: 'vm-ssh-key', version: 'latest' } });
    expect(env.KUBECONFIG.valueSource).toEqual({
      secretKeyRef: { secret: `${jobId}-KUBECONFIG`, version: 'latest' },
    });
    // The minted kubeconfig went to its own labelled secret; the stored one was only referenced.
    expect(fake.secretVersions(`${jobId}-KUBECONFIG`)).toEqual([MINTED]);
    expect(fake.secretLabels(`${jobId}-KUBECONFIG`)).toMatchObject({ remote_worker_job: jobId });
    expect(fake.secretVersions('db-admin')).toEqual([STORED]);
    expect(calls('runJob', jobId)).toHaveLength(1);
    expect(fake.executions(jobId)).toEqual([expect.objectContaining({ state: 'pending' })]);
  });

  it('reports pending, then running, then a success as exit 0', async () => {
    const run = dispatchingRun();
    const gcp = launcher();
    const handle = await gcp.launch({ run, image: IMAGE });

    expect(await gcp.status(handle, run)).toEqual({ state: 'pending' });
    fake.startExecution(executionOf(handle));
    expect(await gcp.status(handle, run)).toEqual({ state: 'running' });
    fake.succeedExecution(executionOf(handle));
    expect(await gcp.status(handle, run)).toEqual({ state: 'exited', exitCode: 0 });
  });

  it("reports a failure with the failed task's exit code and Cloud Run's words", async () => {
    const run = dispatchingRun();
    const gcp = launcher();
    const handle = await gcp.launch({ run, image: IMAGE });
    fake.startExecution(executionOf(handle));
    fake.failExecution(executionOf(handle), { exitCode: 2, message: 'Task failed: container exited with 2' });

    const status = await gcp.status(handle, run);

    expect(status).toEqual({
      state: 'exited',
      exitCode: 2,
      reason: 'the runner container exited with code 2 (Cloud Run: Task failed: container exited with 2)',
    });
    // Without a TasksClient, Cloud Run's execution alone has no exit code: a reason, and no code.
    expect(await launcher({}, { withTasks: false }).status(handle, run)).toEqual({
      state: 'exited',
      reason: 'the Cloud Run execution failed: Task failed: container exited with 2',
    });
  });

  it('adopts the execution on a second delivery and creates nothing new', async () => {
    const run = dispatchingRun();
    const jobId = jobIdOf(run);
    const first = await launcher().launch({ run, image: IMAGE });
    fake.startExecution(executionOf(first));

    const second = await launcher().launch({ run, image: IMAGE });

    expect(second).toBe(first);
    expect(calls('createJob').filter((r) => r.query.jobId === jobId)).toHaveLength(1);
    expect(calls('runJob', jobId)).toHaveLength(1);
    expect(calls('addSecretVersion', jobId)).toHaveLength(1);
    expect(fake.executions(jobId)).toHaveLength(1);
  });

  it('returns the finished execution to a late duplicate delivery and never runs the job again', async () => {
    const run = dispatchingRun();
    const jobId = jobIdOf(run);
    const gcp = launcher();
    const handle = await gcp.launch({ run, image: IMAGE });
    fake.startExecution(executionOf(handle));
    fake.failExecution(executionOf(handle), { exitCode: 1 });

    expect(await gcp.launch({ run, image: IMAGE })).toBe(handle);
    expect(calls('runJob', jobId)).toHaveLength(1);
    expect(fake.executions(jobId)).toEqual([expect.objectContaining({ state: 'failed' })]);
  });

  it('uses the job a failed delivery created, and runs a new job for a new attempt', async () => {
    const run = dispatchingRun();
    const jobId = jobIdOf(run);
    fake.failNext('runJob', { status: 503, times: 4 });

    await expect(launcher().launch({ run, image: IMAGE })).rejects.toThrow(LauncherUnavailableError);
    expect(fake.jobIds()).toContain(jobId);
    expect(fake.executions(jobId)).toEqual([]);

    const handle = await launcher().launch({ run, image: IMAGE });
    const next = await launcher().launch({ run: { ...run, attempt: 2 }, image: IMAGE });

    expect(calls('createJob').filter((r) => r.query.jobId === jobId)).toHaveLength(1);
    expect(fake.executions(jobId)).toHaveLength(1);
    expect(parseCloudRunHandle(handle)?.jobId).toBe(jobId);
    expect(parseCloudRunHandle(next)?.jobId).toBe(cloudRunJobId({ runId: run.id, attempt: 2 }));
  });

  it('does not start a second execution when the RunJob answer is lost, on retry or on redelivery', async () => {
    // Retry within one launch: the job is read again before any second RunJob.
    const run = dispatchingRun();
    const jobId = jobIdOf(run);
    fake.failNext('runJob', { status: 503, afterEffect: true });

    const handle = await launcher().launch({ run, image: IMAGE });

    expect(calls('runJob', jobId)).toHaveLength(1);
    expect(fake.executions(jobId).map((e) => e.name)).toEqual([executionOf(handle)]);

    // Redelivery: this time the re-reads fail too, so the launch gives up; the next delivery adopts.
    const other = dispatchingRun();
    const otherJob = jobIdOf(other);
    fake.failNext('runJob', { status: 503, afterEffect: true });
    fake.failNext('getJob', { status: 503, skip: 2, times: 4 });

    await expect(launcher().launch({ run: other, image: IMAGE })).rejects.toThrow(LauncherUnavailableError);
    const adopted = await launcher().launch({ run: other, image: IMAGE });

    expect(calls('runJob', otherJob)).toHaveLength(1);
    expect(fake.executions(otherJob).map((e) => e.name)).toEqual([executionOf(adopted)]);
  });

  it('retries a 429 on CreateJob and a 503 on GetExecution, and reports persistent 503s as unavailable', async () => {
    const run = dispatchingRun();
    const jobId = jobIdOf(run);
    const gcp = launcher();
    fake.failNext('createJob', { status: 429, retryAfter: '0' });

    const handle = await gcp.launch({ run, image: IMAGE });

    expect(calls('createJob').filter((r) => r.query.jobId === jobId)).toHaveLength(2);
    expect(fake.jobIds()).toContain(jobId);

    const before = calls('getExecution').length;
    fake.failNext('getExecution', { status: 503 });
    expect(await gcp.status(handle, run)).toEqual({ state: 'pending' });
    expect(calls('getExecution').length - before).toBe(2);

    fake.failNext('getExecution', { status: 503, times: 4 });
    const error = await gcp.status(handle, run).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LauncherUnavailableError);
    expect((error as Error).message).toMatch(/^Cloud Run GetExecution failed, will retry \(503 UNAVAILABLE/);
  });

  it('cancels a running execution, and treats a finished or deleted one as already stopped', async () => {
    const run = dispatchingRun();
    const gcp = launcher();
    const handle = await gcp.launch({ run, image: IMAGE });
    fake.startExecution(executionOf(handle));

    await gcp.cancel(handle, run, 30);

    expect(fake.executions(jobIdOf(run))).toEqual([
      expect.objectContaining({ state: 'cancelled', cancelRequests: 1 }),
    ]);
    expect(await gcp.status(handle, run)).toEqual({
      state: 'exited',
      reason: 'the Cloud Run execution was cancelled (The execution was cancelled.)',
    });
    await expect(gcp.cancel(handle, run, 30)).resolves.toBeUndefined();
    await gcp.cleanup(handle, run);
    await expect(gcp.cancel(handle, run, 30)).resolves.toBeUndefined();
  });

  it('cleanup deletes the job, its executions and the per-run secrets, and may run again', async () => {
    const run = dispatchingRun();
    const jobId = jobIdOf(run);
    const gcp = launcher();
    const handle = await gcp.launch({ run, image: IMAGE });
    fake.startExecution(executionOf(handle));
    fake.succeedExecution(executionOf(handle));
    expect(fake.secretIds()).toContain(`${jobId}-KUBECONFIG`);

    await gcp.cleanup(handle, run);
    await gcp.cleanup(handle, run);

    expect(fake.jobIds()).not.toContain(jobId);
    expect(fake.executions(jobId)).toEqual([]);
    expect(fake.secretIds().filter((id) => id.startsWith(jobId))).toEqual([]);
    expect(fake.secretVersions('db-admin')).toEqual([STORED]);
    expect(await gcp.status(handle, run)).toMatchObject({
      state: 'missing',
      reason: expect.stringContaining(
        `Cloud Run no longer knows execution ${parseCloudRunHandle(handle)?.executionId}`,
      ),
    });
  });

  it('answers the limit asked for, above its own default page size, up to LOG_PAGE_MAX_LINES', async () => {
    const run = dispatchingRun();
    const gcp = launcher({ logPageSize: 2 });
    const handle = await gcp.launch({ run, image: IMAGE });
    const name = executionOf(handle);
    fake.startExecution(name);
    for (let i = 1; i <= 5; i += 1) {
      fake.appendLog(name, { text: `line ${i}`, timestamp: `2030-01-01T00:00:0${i}Z`, insertId: `i${i}` });
    }

    const four = await gcp.logs(handle, run, undefined, 4);
    const rest = await gcp.logs(handle, run, four.nextCursor, LOG_PAGE_MAX_LINES + 1);

    expect(four.lines.map((l) => l.text)).toEqual(['line 1', 'line 2', 'line 3', 'line 4']);
    expect(rest.lines.map((l) => l.text)).toEqual(['line 5']);
  });

  it('follows the logs with a cursor, without duplicates, and keeps reading them after cleanup', async () => {
    const run = dispatchingRun();
    const gcp = launcher({ logPageSize: 2 });
    const handle = await gcp.launch({ run, image: IMAGE });
    const name = executionOf(handle);
    const other = await gcp.launch({ run: dispatchingRun(), image: IMAGE });
    fake.startExecution(name);
    const t = '2030-01-01T00:00:01.000000001Z';
    // Three entries with one timestamp, across a page boundary: only (timestamp, insertId) tells them apart.
    fake.appendLog(name, { text: 'PLAY [all]', timestamp: t, insertId: 'a1' });
    fake.appendLog(name, { text: 'TASK [ping]', timestamp: t, insertId: 'a2' });
    fake.appendLog(name, { text: 'ok: [vm-1]', timestamp: t, insertId: 'a3' });
    fake.appendLog(executionOf(other), { text: 'another run', timestamp: t, insertId: 'a0' });

    const pages: LogLine[][] = [];
    let page = await gcp.logs(handle, run);
    pages.push([...page.lines]);
    page = await gcp.logs(handle, run, page.nextCursor);
    pages.push([...page.lines]);
    const idle = await gcp.logs(handle, run, page.nextCursor);

    expect(pages.map((p) => p.map((l) => l.text))).toEqual([['PLAY [all]', 'TASK [ping]'], ['ok: [vm-1]']]);
    expect(idle).toEqual({ lines: [], nextCursor: page.nextCursor });

    // Appended while running: only the new lines, numbered on, each stream tagged.
    fake.appendLog(name, {
      text: 'warning: deprecated',
      stream: 'stderr',
      timestamp: '2030-01-01T00:00:02Z',
    });
    fake.appendLog(name, { json: { changed: true, host: 'vm-1' }, timestamp: '2030-01-01T00:00:02.5Z' });
    const live = await gcp.logs(handle, run, idle.nextCursor);
    expect(live.lines).toEqual([
      { seq: 4, at: '2030-01-01T00:00:02.000Z', stream: 'stderr', text: 'warning: deprecated' },
      { seq: 5, at: '2030-01-01T00:00:02.500Z', stream: 'stdout', text: '{"changed":true,"host":"vm-1"}' },
    ]);

    fake.appendLog(name, { text: 'remote-worker: exit code 0', timestamp: '2030-01-01T00:00:03Z' });
    fake.succeedExecution(name);
    await gcp.cleanup(handle, run);
    const after = await gcp.logs(handle, run, live.nextCursor);
    const replay = await gcp.logs(handle, run);

    expect(after.lines).toEqual([
      { seq: 6, at: '2030-01-01T00:00:03.000Z', stream: 'system', text: 'remote-worker: exit code 0' },
    ]);
    expect(replay.lines.map((l) => l.text)).toEqual(['PLAY [all]', 'TASK [ping]']);
    const filters = calls('listLogEntries').map((r) => JSON.parse(r.body).filter as string);
    expect(filters.at(-1)).toContain(
      `labels."run.googleapis.com/execution_name"="${parseCloudRunHandle(handle)?.executionId}"`,
    );
    expect(filters.at(-1)).toContain('resource.type="cloud_run_job"');
  });

  it('never puts a secret value in a Cloud Run request, and only base64 in addVersion', async () => {
    const run = dispatchingRun();
    const gcp = launcher();
    const from = fake.requests.length;

    const handle = await gcp.launch({ run, image: IMAGE });
    fake.startExecution(executionOf(handle));
    await gcp.status(handle, run);
    await gcp.cancel(handle, run, 0);
    await gcp.cleanup(handle, run);

    const sent = fake.requests.slice(from);
    expect(sent.map((r) => r.action)).toEqual(
      expect.arrayContaining(['createJob', 'runJob', 'addSecretVersion', 'cancelExecution', 'deleteJob']),
    );
    for (const r of sent) {
      const wire = `${r.path} ${JSON.stringify(r.query)} ${r.body}`;
      expect(wire).not.toContain(MINTED_MARK);
      expect(wire).not.toContain(STORED);
      expect(wire).not.toContain('ssh-key-canary-77c2');
      if (r.action !== 'addSecretVersion') expect(wire).not.toContain(MINTED_B64);
    }
    expect(sent.filter((r) => r.body.includes(MINTED_B64)).map((r) => r.action)).toEqual([
      'addSecretVersion',
    ]);
    // The capture does see the wire: the spec is in the job, the secret only by name.
    expect(sent.find((r) => r.action === 'createJob')?.body).toContain('RW_TASK');
  });

  it('keeps the secret out of the error when Secret Manager refuses it, and leaves nothing behind', async () => {
    const run = dispatchingRun();
    const jobId = jobIdOf(run);
    // A careless server that quotes the request (the base64 value) in its error.
    fake.failNext('addSecretVersion', { status: 400, echoBody: true, message: 'Payload rejected' });

    const error = await launcher()
      .launch({ run, image: IMAGE })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect((error as Error).message).toBe(
      `Secret Manager AddSecretVersion ${jobId}-KUBECONFIG was refused (400 INVALID_ARGUMENT)`,
    );
    const everything = inspect(error, { depth: 10, showHidden: true });
    expect(everything).not.toContain(MINTED_B64);
    expect(everything).not.toContain(MINTED_MARK);
    expect(fake.jobIds()).not.toContain(jobId);
    expect(fake.secretIds().filter((id) => id.startsWith(jobId))).toEqual([]);
  });

  it('refuses a spec too large for a Cloud Run env value, and a job Cloud Run refuses, cleaning up', async () => {
    const big = dispatchingRun({ filler: 'x'.repeat(33_000) });
    await expect(launcher().launch({ run: big, image: IMAGE })).rejects.toThrow(
      /^task spec too large for a Cloud Run env value \(\d+ bytes > 32768\)/,
    );
    expect(fake.jobIds()).not.toContain(jobIdOf(big));

    const run = dispatchingRun();
    fake.failNext('createJob', { status: 400, message: 'Image not found' });
    await expect(launcher().launch({ run, image: IMAGE })).rejects.toThrow(
      new LaunchRejectedError('Cloud Run CreateJob was refused (400 INVALID_ARGUMENT: Image not found)'),
    );
    expect(fake.secretIds().filter((id) => id.startsWith(jobIdOf(run)))).toEqual([]);
  });

  it('maps an unreachable endpoint to LauncherUnavailableError', async () => {
    const offline = new JobsClient({
      apiEndpoint: '127.0.0.1',
      port: 9,
      protocol: 'http',
      fallback: true,
      authClient: auth,
    });
    try {
      await expect(
        launcher({ jobs: offline }).launch({ run: dispatchingRun(), image: IMAGE }),
      ).rejects.toThrow(/^Cloud Run GetJob failed, will retry \(no answer/);
    } finally {
      await offline.close();
    }
  });
});

describe('cloudRunJobId', () => {
  it('uses the lower-cased ULID when it fits, and a readable prefix plus a hash otherwise', () => {
    expect(cloudRunJobId({ runId: '01JD3Q6Z8W3S9V0M2K4T7YB5NE', attempt: 3 })).toBe(
      'rw-01jd3q6z8w3s9v0m2k4t7yb5ne-a3',
    );

    const odd = cloudRunJobId({ runId: 'Run_With.Odd/Chars', attempt: 1 });
    const oddCase = cloudRunJobId({ runId: 'run_with.odd/chars', attempt: 1 });
    const long = cloudRunJobId({ runId: 'r'.repeat(200), attempt: 12 });

    for (const id of [odd, oddCase, long]) {
      expect(id).toMatch(/^[a-z]([-a-z0-9]*[a-z0-9])?$/);
      expect(id.length).toBeLessThanOrEqual(JOB_ID_MAX);
    }
    expect(odd).toMatch(/^rw-run-with-odd-chars-[0-9a-f]{10}-a1$/);
    // Ids that differ only in case must not share a job.
    expect(odd).not.toBe(oddCase);
    expect(long).toMatch(/-a12$/);
    expect(cloudRunJobId({ runId: 'r'.repeat(200), attempt: 12 })).toBe(long);
  });

  it('round-trips a handle', () => {
    const h = { project: 'my-proj', region: 'europe-west1', jobId: 'rw-x-a1', executionId: 'rw-x-a1-abcde' };
    expect(parseCloudRunHandle(formatCloudRunHandle(h))).toEqual(h);
    expect(parseCloudRunHandle('ecs:cluster/arn')).toBeUndefined();
    expect(parseCloudRunHandle('gcp:p/r/j')).toBeUndefined();
  });
});
