import { inspect } from 'node:util';
import { ContainerInstanceManagementClient } from '@azure/arm-containerinstance';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AciLauncherOptions } from '../../shared/adapters/aci/config.ts';
import { ATTEMPT_TAG, RUN_ID_TAG } from '../../shared/adapters/aci/container-group.ts';
import { containerGroupName, formatAciHandle, parseAciHandle } from '../../shared/adapters/aci/handle.ts';
import { AciLauncher } from '../../shared/adapters/aci/launcher.ts';
import { GAP_NOTICE } from '../../shared/adapters/aci/log-cursor.ts';
import type { AzureBlobAssetStore } from '../../shared/adapters/azure-blob/asset-store.ts';
import { openDatabase, type SqliteDatabase } from '../../shared/adapters/sqlite/database.ts';
import { SqliteLogStore } from '../../shared/adapters/sqlite/log-store.ts';
import { SqliteRunStore } from '../../shared/adapters/sqlite/run-store.ts';
import { SqliteTargetStore } from '../../shared/adapters/sqlite/target-store.ts';
import { syncBackends } from '../../shared/app/sync-backends.ts';
import { prepareTask } from '../../shared/app/task-prep.ts';
import { LauncherUnavailableError, LaunchRejectedError, NotFoundError } from '../../shared/domain/errors.ts';
import { newRun, type Run, type SecretBinding, transition } from '../../shared/domain/run.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import { newId } from '../../shared/lib/ids.ts';
import type { LogLine, LogPage } from '../../shared/ports/log-store.ts';
import { azureAssetStore, exampleAssets } from '../support/asset-stores.ts';
import { type FakeArmAci, type RecordedArmRequest, startFakeArmAci } from '../support/fake-arm-aci.ts';
import { type FakeAzureBlob, startFakeAzureBlob } from '../support/fake-azure-blob.ts';
import { runTaskOnLocalhost } from '../support/task-run.ts';
import { createQueuedRun, ManualClock, markLaunched, silentLogger, vmTarget } from '../unit/app/harness.ts';

/**
 * AciLauncher: the real `@azure/arm-containerinstance` client against a
 * loopback fake of ARM (test/support/fake-arm-aci.ts) over https with a test
 * CA. Where the fake differs from Azure:
 * - nothing moves on its own: the test moves a container Waiting → Running →
 *   Terminated and writes its output; a real group pulls its image and runs;
 * - a PUT answers 201 with `provisioningState: Creating` and no
 *   `Azure-AsyncOperation` header, so the SDK's first poll GETs the group; ARM
 *   sends the header and the SDK polls the operation (the launcher waits for
 *   neither);
 * - DELETE removes the group at once and answers 200 (ARM may answer 202 and
 *   finish later); a missing group answers 204, as ARM does;
 * - stop turns unfinished containers into Terminated with exit code 137 and the
 *   group into `Stopped`; what ACI reports for a stopped group's containers is
 *   not documented, and the launcher does not depend on it;
 * - `timestamps=true` prefixes Docker-style RFC 3339 nanosecond timestamps;
 *   retention (the last N lines, 1,000 unless a test says otherwise) is applied
 *   the moment a container terminates, by lines only, not also ACI's ~16 KB;
 * - an image that cannot be pulled is modelled as `provisioningState: Failed`
 *   with a Warning event; ACI often refuses an inaccessible image at the PUT
 *   (400 InaccessibleImage), which the launcher reports as a rejected launch;
 * - only the checks listed in the fake are made on a PUT (name, location,
 *   containers, osType, value xor secureValue): no quota, region, subnet
 *   delegation or registry login; the bearer token is compared, not verified;
 * - throttling and 5xx happen only when a test injects them, with the
 *   Retry-After it chooses.
 */

const RG = 'rg-remote-worker';
const LOCATION = 'westeurope';
const IMAGE = 'rwregistry.azurecr.io/ansible-cloud:1';
const SECRET_VALUE = 'canary-aci-7d1f-do-not-leak';
const ACR_PASSWORD = 'acr-canary-91c2-do-not-leak';
const ACR_SERVER = 'rwregistry.azurecr.io';
const SUBNET_A =
  '/subscriptions/00000000-0000-4000-8000-000000000001/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/vnet/subnets/aci-a';
const SUBNET_B =
  '/subscriptions/00000000-0000-4000-8000-000000000001/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/vnet/subnets/aci-b';

/** The SDK's retry policy, made quick: 2 retries 10–40 ms apart (production keeps the SDK defaults). */
const clientFor = (fake: FakeArmAci) =>
  new ContainerInstanceManagementClient(
    { getToken: async () => ({ token: fake.token, expiresOnTimestamp: Date.now() + 3_600_000 }) },
    fake.subscriptionId,
    {
      endpoint: fake.endpoint,
      tlsOptions: { ca: fake.ca },
      retryOptions: { maxRetries: 2, retryDelayInMs: 10, maxRetryDelayInMs: 40 },
    },
  );

const texts = (lines: readonly LogLine[]) => lines.map((l) => l.text);
const groupOf = (handle: string) => parseAciHandle(handle)!.containerGroup;

describe('containerGroupName', () => {
  const VALID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

  it('names a ULID run plainly, and any other id by a hash, always within ACI’s rules', () => {
    const ulid = newId();
    expect(containerGroupName({ runId: ulid, attempt: 1 })).toBe(`rw-${ulid.toLowerCase()}-1`);
    expect(containerGroupName({ runId: ulid, attempt: 2 })).toBe(`rw-${ulid.toLowerCase()}-2`);

    const odd = [
      'Run_42/Ä',
      'run-42-ä',
      'ABC',
      'abc-',
      '--',
      'x'.repeat(200),
      `${'y'.repeat(70)}Q`,
      `${'y'.repeat(70)}q`,
    ];
    const names = odd.map((runId) => containerGroupName({ runId, attempt: 12 }));
    for (const name of names) {
      expect(name).toMatch(VALID);
      expect(name.length).toBeLessThanOrEqual(63);
      expect(name.endsWith('-12')).toBe(true);
    }
    expect(new Set(names).size).toBe(odd.length);
    // Deterministic: the same id always gives the same name.
    expect(containerGroupName({ runId: 'Run_42/Ä', attempt: 12 })).toBe(names[0]);

    const handle = formatAciHandle({ resourceGroup: 'rg_(prod).eu-1', containerGroup: names[0]! });
    expect(parseAciHandle(handle)).toEqual({ resourceGroup: 'rg_(prod).eu-1', containerGroup: names[0] });
    expect(parseAciHandle('ecs:cluster/arn')).toBeUndefined();
    expect(parseAciHandle('aci:rg/Not_Valid')).toBeUndefined();
  });
});

describe('AciLauncher against a fake ARM', () => {
  let fake: FakeArmAci;
  /** Assets on the Azure Blob fake: a container group reads its asset through a read SAS. */
  let blobs: FakeAzureBlob;
  let assets: AzureBlobAssetStore;
  let aci: ContainerInstanceManagementClient;
  let db: SqliteDatabase;
  let store: SqliteRunStore;
  let targets: SqliteTargetStore;
  let archive: SqliteLogStore;

  const launcher = (overrides: Partial<AciLauncherOptions> = {}) =>
    new AciLauncher({
      aci,
      resourceGroup: RG,
      location: LOCATION,
      subnetIds: [SUBNET_A, SUBNET_B],
      registry: { server: ACR_SERVER, username: 'puller', password: async () => ACR_PASSWORD },
      prepare: (run) =>
        prepareTask(
          {
            store,
            targets,
            assets,
            secrets: {
              get: async (name) => {
                if (name === 'db-admin') return SECRET_VALUE;
                throw new NotFoundError(`Secret ${name} does not exist`);
              },
            },
          },
          run,
        ),
      archive,
      pollIntervalMs: 10,
      ...overrides,
    });

  /** A run as the dispatcher hands it to a launcher: claimed, attempt 1. */
  const dispatchingRun = (input: { secrets?: SecretBinding[]; attempt?: number } = {}): Run => {
    const draft = newRun(
      {
        id: newId(),
        kind: 'vm',
        targetId: 'vm-1',
        asset: 'hello/site.yml',
        extraVars: { greeting: 'hi from ACI' },
        secrets: input.secrets ?? [],
        requestedBy: 'alice',
        timeoutSeconds: 600,
      },
      new Date().toISOString(),
    );
    return transition(draft, 'dispatching', new Date().toISOString(), {
      patch: { attempt: input.attempt ?? 1, owner: 'dispatcher:test', runner: 'aci', image: IMAGE },
    });
  };

  const requestsFor = (name: string, method?: string): RecordedArmRequest[] =>
    fake.requests.filter(
      (r) => r.path.includes(`/containerGroups/${name}`) && (method === undefined || r.method === method),
    );

  /** Every page from `cursor` until nothing new, like `runs logs --follow` between two polls. */
  const drain = async (l: AciLauncher, handle: string, run: Run, cursor?: string) => {
    const lines: LogLine[] = [];
    let next = cursor;
    for (;;) {
      const page: LogPage = await l.logs(handle, run, next);
      lines.push(...page.lines);
      if (page.lines.length === 0) return { lines, cursor: page.nextCursor };
      next = page.nextCursor;
    }
  };

  beforeAll(async () => {
    blobs = await startFakeAzureBlob();
    assets = azureAssetStore(blobs, 'rw-assets', exampleAssets('hello/site.yml'));
    fake = await startFakeArmAci();
    fake.createResourceGroup(RG);
    aci = clientFor(fake);
    db = openDatabase(':memory:');
    store = new SqliteRunStore({ db });
    targets = new SqliteTargetStore({ db });
    archive = new SqliteLogStore({ db });
    await targets.putTarget(vmTarget('vm-1', { cloud: 'azure', address: '10.4.0.7' }));
  }, 30_000);

  afterAll(async () => {
    db?.close();
    await fake?.close();
    await blobs?.close();
  });

  it('creates one container group per run and attempt, with the run’s definition, and adopts it when launched again', async () => {
    const run = dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] });
    const aciLauncher = launcher();

    const first = await aciLauncher.launch({ run, image: IMAGE });
    // A redelivered dispatch of the same attempt finds the group by its name.
    const second = await aciLauncher.launch({ run, image: IMAGE });

    const name = `rw-${run.id.toLowerCase()}-1`;
    expect(first).toBe(`aci:${RG}/${name}`);
    expect(second).toBe(first);
    expect(requestsFor(name, 'PUT')).toHaveLength(1);
    const { definition } = fake.group(RG, name)!;
    expect(definition).toMatchObject({
      location: LOCATION,
      tags: { [RUN_ID_TAG]: run.id, [ATTEMPT_TAG]: '1' },
      properties: {
        osType: 'Linux',
        restartPolicy: 'Never',
        subnetIds: [{ id: SUBNET_A }, { id: SUBNET_B }],
        imageRegistryCredentials: [{ server: ACR_SERVER, username: 'puller', password: ACR_PASSWORD }],
      },
    });
    const [container, ...others] = definition.properties.containers;
    expect(others).toEqual([]);
    expect(container?.name).toBe('runner');
    expect(container?.properties.image).toBe(IMAGE);
    expect(container?.properties.resources).toEqual({ requests: { cpu: 1, memoryInGB: 2 } });
    const env = container?.properties.environmentVariables ?? [];
    expect(env.map((e) => e.name)).toEqual(['RW_TASK', 'RW_RUN_ID', 'RW_SECRET_0']);
    expect(env[1]).toEqual({ name: 'RW_RUN_ID', value: run.id });
    expect(env[2]).toEqual({ name: 'RW_SECRET_0', secureValue: SECRET_VALUE });
    const spec = JSON.parse(env[0]?.value ?? '{}') as TaskSpec;
    expect(spec).toMatchObject({
      runId: run.id,
      kind: 'vm',
      assetType: 'playbook',
      extraVars: { greeting: 'hi from ACI' },
      secretVars: [{ var: 'db_password', env: 'RW_SECRET_0' }],
      inventory: { all: { hosts: { 'vm-1': { ansible_host: '10.4.0.7' } } } },
    });
    // The asset is a read-only SAS for that one blob, which the task fetches and runs.
    const sas = new URL(spec.asset.kind === 'url' ? spec.asset.url : '');
    expect(sas.pathname).toBe('/devstoreaccount1/rw-assets/playbooks/hello/site.yml');
    expect(sas.searchParams.get('sp')).toBe('r');
    expect(sas.searchParams.get('sr')).toBe('b');
    const task = await runTaskOnLocalhost(spec);
    expect(task.code).toBe(0);
    expect(task.output).toContain('hi from ACI from localhost');
    expect(task.output).not.toContain(sas.searchParams.get('sig'));

    // A new attempt is a new group; CPU and memory come from the options.
    const next = await launcher({ cpu: 2, memoryInGB: 4 }).launch({
      run: { ...run, attempt: 2 },
      image: IMAGE,
    });
    expect(next).toBe(`aci:${RG}/rw-${run.id.toLowerCase()}-2`);
    expect(fake.group(RG, groupOf(next))?.definition.properties.containers[0]?.properties.resources).toEqual({
      requests: { cpu: 2, memoryInGB: 4 },
    });
  });

  it('sends secret values only as secureValue and the registry password only in its field, and keeps both out of errors', async () => {
    const run = dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] });
    const from = fake.requests.length;

    await launcher().launch({ run, image: IMAGE });

    const sent = fake.requests.slice(from);
    const put = sent.find((r) => r.method === 'PUT');
    // The canaries did travel, exactly where they belong: the check below can see them.
    expect(put?.body.split(SECRET_VALUE)).toHaveLength(2);
    expect(put?.body.split(ACR_PASSWORD)).toHaveLength(2);
    for (const r of sent) {
      const body = r.body === '' ? {} : JSON.parse(r.body);
      for (const c of body.properties?.containers ?? []) {
        for (const v of c.properties?.environmentVariables ?? []) delete v.secureValue;
      }
      for (const credential of body.properties?.imageRegistryCredentials ?? []) delete credential.password;
      const outside = JSON.stringify([r.method, r.path, r.query, r.headers, body]);
      expect(outside).not.toContain(SECRET_VALUE);
      expect(outside).not.toContain(ACR_PASSWORD);
    }

    // ARM refusing the create and quoting the request back must not carry the values into the error.
    const other = dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] });
    fake.failNext({
      method: 'PUT',
      status: 400,
      code: 'InvalidContainerGroupDefinition',
      message: `Environment value '${SECRET_VALUE}' and registry password '${ACR_PASSWORD}' are invalid.`,
    });
    const error = await launcher()
      .launch({ run: other, image: IMAGE })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect((error as Error).message).toMatch(
      /^ACI create container group rw-.* was refused \(InvalidContainerGroupDefinition/,
    );
    const everything = `${inspect(error, { depth: null, showHidden: true })} ${JSON.stringify(error)}`;
    expect(everything).not.toContain(SECRET_VALUE);
    expect(everything).not.toContain(ACR_PASSWORD);
  });

  it('reports pending, running and a clean exit as the container moves', async () => {
    const run = dispatchingRun();
    const aciLauncher = launcher();
    const handle = await aciLauncher.launch({ run, image: IMAGE });
    const name = groupOf(handle);

    expect(await aciLauncher.status(handle, run)).toEqual({ state: 'pending' });
    fake.setContainer(RG, name, { state: 'Waiting', detailStatus: 'Pulling image' });
    expect(await aciLauncher.status(handle, run)).toEqual({ state: 'pending' });
    fake.setContainer(RG, name, { state: 'Running' });
    expect(await aciLauncher.status(handle, run)).toEqual({ state: 'running' });
    fake.setContainer(RG, name, { state: 'Terminated', exitCode: 0, detailStatus: 'Completed' });
    expect(await aciLauncher.status(handle, run)).toEqual({ state: 'exited', exitCode: 0 });
  });

  it('reports a failed container with its exit code and reason, an unpullable image with ACI’s words, and a missing group', async () => {
    const aciLauncher = launcher();
    const failing = await aciLauncher.launch({ run: dispatchingRun(), image: IMAGE });
    fake.setContainer(RG, groupOf(failing), { state: 'Running' });
    fake.setContainer(RG, groupOf(failing), { state: 'Terminated', exitCode: 2, detailStatus: 'Error' });

    expect(await aciLauncher.status(failing)).toEqual({
      state: 'exited',
      exitCode: 2,
      reason: 'the runner container exited with code 2',
    });

    const unpullable = await aciLauncher.launch({ run: dispatchingRun(), image: IMAGE });
    fake.failProvisioning(
      RG,
      groupOf(unpullable),
      `Failed to pull image "${IMAGE}": unauthorized: authentication required`,
    );
    const status = await aciLauncher.status(unpullable);
    expect(status).toEqual({
      state: 'exited',
      reason: `ACI could not deploy the container group: Failed to pull image "${IMAGE}": unauthorized: authentication required`,
    });

    expect(await aciLauncher.status(`aci:${RG}/rw-never-created-1`)).toEqual({
      state: 'missing',
      reason: expect.stringContaining('ACI has no container group rw-never-created-1'),
    });
    await expect(aciLauncher.status('ecs:cluster/arn')).rejects.toThrow(LaunchRejectedError);
  });

  it('adopts a group that already ran to completion: a late duplicate launch deploys nothing', async () => {
    const run = dispatchingRun();
    const aciLauncher = launcher();
    const handle = await aciLauncher.launch({ run, image: IMAGE });
    const name = groupOf(handle);
    fake.setContainer(RG, name, { state: 'Running' });
    fake.appendLog(RG, name, 'PLAY RECAP\n');
    fake.setContainer(RG, name, { state: 'Terminated', exitCode: 0, detailStatus: 'Completed' });
    const puts = requestsFor(name, 'PUT').length;

    // The same dispatch message, delivered again after the task finished.
    expect(await aciLauncher.launch({ run, image: IMAGE })).toBe(handle);

    expect(requestsFor(name, 'PUT')).toHaveLength(puts);
    expect(fake.group(RG, name)?.deployments).toBe(1);
    expect(await aciLauncher.status(handle, run)).toEqual({ state: 'exited', exitCode: 0 });
    expect(texts((await aciLauncher.logs(handle, run)).lines)).toEqual(['PLAY RECAP']);
  });

  it('cancels by stopping and deleting the group, keeps its output, and succeeds when the group is already gone', async () => {
    const run = dispatchingRun();
    const aciLauncher = launcher();
    const handle = await aciLauncher.launch({ run, image: IMAGE });
    const name = groupOf(handle);
    fake.setContainer(RG, name, { state: 'Running' });
    fake.appendLog(RG, name, 'TASK [long job]\nstill going');
    const from = fake.requests.length;

    await aciLauncher.cancel(handle, run, 30);

    const calls = fake.requests
      .slice(from)
      .filter((r) => r.method !== 'GET')
      .map((r) => `${r.method} ${r.path.slice(r.path.lastIndexOf('/'))}`);
    expect(calls).toEqual(['POST /stop', `DELETE /${name}`]);
    expect(fake.group(RG, name)).toBeUndefined();
    expect(await aciLauncher.status(handle, run)).toMatchObject({ state: 'missing' });
    // The unterminated last line could not grow any more once the group was gone: it was kept too.
    expect(texts((await aciLauncher.logs(handle, run)).lines)).toEqual(['TASK [long job]', 'still going']);

    await expect(aciLauncher.cancel(handle, run, 30)).resolves.toBeUndefined();
    expect(texts((await drain(aciLauncher, handle, run)).lines)).toEqual(['TASK [long job]', 'still going']);
  });

  it('cleanup archives the output, deletes every object the run created and is idempotent', async () => {
    const rg = 'rg-cleanup';
    fake.createResourceGroup(rg);
    const aciLauncher = launcher({ resourceGroup: rg });
    const run = dispatchingRun({ secrets: [{ var: 'db_password', secret: 'db-admin' }] });
    const handle = await aciLauncher.launch({ run, image: IMAGE });
    const name = groupOf(handle);
    fake.setContainer(rg, name, { state: 'Running' });
    fake.appendLog(rg, name, 'ok: [vm-1]\n');
    fake.setContainer(rg, name, { state: 'Terminated', exitCode: 0, detailStatus: 'Completed' });
    expect(fake.groups(rg)).toEqual([name]);

    await aciLauncher.cleanup(handle, run);

    expect(fake.groups(rg)).toEqual([]);
    expect(texts((await archive.read(run.id)).lines)).toEqual(['ok: [vm-1]']);
    await expect(aciLauncher.cleanup(handle, run)).resolves.toBeUndefined();
    expect(fake.groups(rg)).toEqual([]);
    expect(texts((await archive.read(run.id)).lines)).toEqual(['ok: [vm-1]']);
  });

  it('follows the output with a cursor while it runs and across cleanup, without a repeated or lost line', async () => {
    const run = dispatchingRun();
    const aciLauncher = launcher();
    const handle = await aciLauncher.launch({ run, image: IMAGE });
    const name = groupOf(handle);
    const startedAt = Date.now();
    // Not started yet: no output, and a cursor to come back with.
    const empty = await aciLauncher.logs(handle, run);
    expect(empty.lines).toEqual([]);
    fake.setContainer(RG, name, { state: 'Running' });
    fake.appendLog(RG, name, 'PLAY [all]\nTASK [a]\n');

    const p1 = await aciLauncher.logs(handle, run, empty.nextCursor);
    expect(p1.lines.map((l) => [l.seq, l.stream, l.text])).toEqual([
      [1, 'stdout', 'PLAY [all]'],
      [2, 'stdout', 'TASK [a]'],
    ]);
    expect(Date.parse(p1.lines[0]!.at)).toBeGreaterThanOrEqual(startedAt - 5);
    expect(await aciLauncher.logs(handle, run, p1.nextCursor)).toEqual({
      lines: [],
      nextCursor: p1.nextCursor,
    });

    // A line still being written is held back until it ends.
    fake.appendLog(RG, name, 'ok: [vm-1]\nTASK [b');
    const p2 = await aciLauncher.logs(handle, run, p1.nextCursor);
    expect(texts(p2.lines)).toEqual(['ok: [vm-1]']);
    fake.appendLog(RG, name, ']\nPLAY RECAP\nlast line without newline');
    const p3 = await aciLauncher.logs(handle, run, p2.nextCursor);
    expect(texts(p3.lines)).toEqual(['TASK [b]', 'PLAY RECAP']);
    fake.setContainer(RG, name, { state: 'Terminated', exitCode: 0, detailStatus: 'Completed' });

    const ended = transition(
      transition(run, 'launched', new Date().toISOString()),
      'running',
      new Date().toISOString(),
    );
    const finished = transition(ended, 'succeeded', new Date().toISOString(), { patch: { exitCode: 0 } });
    await aciLauncher.cleanup(handle, finished);
    expect(fake.group(RG, name)).toBeUndefined();

    // The follower's live cursor carries on in the archive.
    const rest = await drain(aciLauncher, handle, finished, p3.nextCursor);
    expect(texts(rest.lines)).toEqual(['last line without newline']);
    const all = [...p1.lines, ...p2.lines, ...p3.lines, ...rest.lines];
    expect(all.map((l) => l.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(texts(all)).toEqual([
      'PLAY [all]',
      'TASK [a]',
      'ok: [vm-1]',
      'TASK [b]',
      'PLAY RECAP',
      'last line without newline',
    ]);
    // A reader arriving after cleanup reads the same lines from the start.
    expect(texts((await drain(aciLauncher, handle, finished)).lines)).toEqual(texts(all));
    await expect(aciLauncher.logs(handle, finished, 'not-a-cursor')).rejects.toThrow(/cursor/);
  });

  it('marks the lines ACI dropped when the container ended instead of repeating what a reader saw', async () => {
    const small = await startFakeArmAci({ retainLinesAfterExit: 5 });
    try {
      small.createResourceGroup(RG);
      const aciLauncher = launcher({ aci: clientFor(small) });
      const run = dispatchingRun();
      const handle = await aciLauncher.launch({ run, image: IMAGE });
      const name = groupOf(handle);
      const write = (from: number, to: number) => {
        for (let i = from; i <= to; i++) small.appendLog(RG, name, `line ${i}\n`);
      };
      small.setContainer(RG, name, { state: 'Running' });
      write(1, 2);
      const early = await aciLauncher.logs(handle, run); // read through line 2
      write(3, 9);
      const late = await aciLauncher.logs(handle, run, early.nextCursor); // through line 9
      expect(texts(late.lines)).toEqual([
        'line 3',
        'line 4',
        'line 5',
        'line 6',
        'line 7',
        'line 8',
        'line 9',
      ]);
      write(10, 12);
      // ACI now keeps only lines 8–12.
      small.setContainer(RG, name, { state: 'Terminated', exitCode: 0 });

      const afterEarly = await aciLauncher.logs(handle, run, early.nextCursor);
      expect(afterEarly.lines.map((l) => [l.seq, l.stream, l.text])).toEqual([
        [3, 'system', GAP_NOTICE],
        [4, 'stdout', 'line 8'],
        [5, 'stdout', 'line 9'],
        [6, 'stdout', 'line 10'],
        [7, 'stdout', 'line 11'],
        [8, 'stdout', 'line 12'],
      ]);
      // Lines 8 and 9 are still held: the reader who saw them gets exactly what followed.
      const afterLate = await aciLauncher.logs(handle, run, late.nextCursor);
      expect(afterLate.lines.map((l) => [l.seq, l.text])).toEqual([
        [10, 'line 10'],
        [11, 'line 11'],
        [12, 'line 12'],
      ]);

      await aciLauncher.cleanup(handle, run);
      expect(small.groups(RG)).toEqual([]);
      expect(await aciLauncher.logs(handle, run, afterLate.nextCursor)).toEqual({
        lines: [],
        nextCursor: afterLate.nextCursor,
      });
      expect(texts((await aciLauncher.logs(handle, run)).lines)).toEqual([
        'line 8',
        'line 9',
        'line 10',
        'line 11',
        'line 12',
      ]);
    } finally {
      await small.close();
    }
  });

  it('retries a throttled create that ARM asked to retry after 1 s, and creates the group once', async () => {
    const run = dispatchingRun();
    const name = `rw-${run.id.toLowerCase()}-1`;
    fake.failNext({
      method: 'PUT',
      path: new RegExp(`/containerGroups/${name}$`),
      status: 429,
      code: 'TooManyRequests',
      message: 'Rate limit exceeded, retry after 1 second.',
      headers: { 'Retry-After': '1' },
    });
    const started = Date.now();

    const handle = await launcher().launch({ run, image: IMAGE });

    expect(handle).toBe(`aci:${RG}/${name}`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(requestsFor(name, 'PUT')).toHaveLength(2);
    expect(fake.group(RG, name)?.deployments).toBe(1);
  });

  it('surfaces 5xx that outlasts the SDK’s retries, and throttling without Retry-After, as LauncherUnavailableError', async () => {
    const run = dispatchingRun();
    const name = `rw-${run.id.toLowerCase()}-1`;
    const handle = `aci:${RG}/${name}`;
    const aciLauncher = launcher();
    // 1 try + 2 retries, all answered 500.
    fake.failNext({ method: 'GET', path: new RegExp(`/containerGroups/${name}$`), status: 500, times: 3 });

    await expect(aciLauncher.launch({ run, image: IMAGE })).rejects.toThrow(LauncherUnavailableError);
    expect(requestsFor(name, 'GET')).toHaveLength(3);
    expect(requestsFor(name, 'PUT')).toHaveLength(0);

    fake.failNext({
      method: 'PUT',
      path: new RegExp(`/containerGroups/${name}$`),
      status: 429,
      code: 'TooManyRequests',
    });
    await expect(aciLauncher.launch({ run, image: IMAGE })).rejects.toThrow(
      /^ACI create container group .* failed, will retry \(TooManyRequests/,
    );
    expect(fake.group(RG, name)).toBeUndefined();

    // The dispatcher's redelivery then succeeds, creating the group once.
    expect(await aciLauncher.launch({ run, image: IMAGE })).toBe(handle);
    expect(fake.group(RG, name)?.deployments).toBe(1);

    fake.failNext({ method: 'GET', path: new RegExp(`/containerGroups/${name}$`), status: 503, times: 3 });
    await expect(aciLauncher.status(handle, run)).rejects.toThrow(LauncherUnavailableError);
    fake.failNext({ method: 'GET', path: /\/logs$/, status: 500, times: 3 });
    await expect(aciLauncher.logs(handle, run)).rejects.toThrow(LauncherUnavailableError);
    expect(await aciLauncher.status(handle, run)).toEqual({ state: 'pending' });
  });

  it('refuses a launch into a resource group that does not exist', async () => {
    const error = await launcher({ resourceGroup: 'rg-typo' })
      .launch({ run: dispatchingRun(), image: IMAGE })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect((error as Error).message).toMatch(
      /ResourceGroupNotFound: Resource group 'rg-typo' could not be found/,
    );
    expect(fake.requests.filter((r) => r.method === 'PUT' && r.path.includes('/rg-typo/'))).toEqual([]);
  });

  it('settles a run through the status sweep and cleans up behind it', async () => {
    const rg = 'rg-sweep';
    fake.createResourceGroup(rg);
    const clock = new ManualClock(new Date().toISOString());
    const sweepStore = new SqliteRunStore({ db, clock });
    const aciLauncher = launcher({ resourceGroup: rg });
    const queued = await createQueuedRun(sweepStore, clock, { id: newId(), targetId: 'vm-1' });
    const handle = await aciLauncher.launch({ run: { ...queued, attempt: 1 }, image: IMAGE });
    await markLaunched(sweepStore, clock, queued, { backend: 'aci', handle });
    const deps = { store: sweepStore, launchers: { aci: aciLauncher }, clock, logger: silentLogger() };
    const name = groupOf(handle);
    fake.setContainer(rg, name, { state: 'Running' });
    fake.appendLog(rg, name, 'fatal: [vm-1]: UNREACHABLE!\n');
    clock.advance(120_000);

    const first = await syncBackends(deps, { staleAfterSeconds: 60, missingGraceSeconds: 300 });
    expect(first.advanced).toEqual([queued.id]);
    expect((await sweepStore.getRun(queued.id))?.state).toBe('running');

    fake.setContainer(rg, name, { state: 'Terminated', exitCode: 4, detailStatus: 'Error' });
    clock.advance(120_000);
    const second = await syncBackends(deps, { staleAfterSeconds: 60, missingGraceSeconds: 300 });

    expect(second.settled).toEqual([queued.id]);
    expect(await sweepStore.getRun(queued.id)).toMatchObject({
      state: 'failed',
      exitCode: 4,
      reason: 'The runner container exited with code 4',
    });
    expect(fake.groups(rg)).toEqual([]);
    const settled = (await sweepStore.getRun(queued.id))!;
    expect(texts((await aciLauncher.logs(handle, settled)).lines)).toEqual(['fatal: [vm-1]: UNREACHABLE!']);
  });
});
