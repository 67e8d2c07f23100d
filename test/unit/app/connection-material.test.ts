import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { releaseCredentials } from '../../../shared/app/credentials.ts';
import { dispatchRun } from '../../../shared/app/dispatch.ts';
import { syncBackends } from '../../../shared/app/sync-backends.ts';
import { prepareTask } from '../../../shared/app/task-prep.ts';
import { LaunchRejectedError, NotFoundError } from '../../../shared/domain/errors.ts';
import type { Run } from '../../../shared/domain/run.ts';
import type { ClusterTarget, Target } from '../../../shared/domain/target.ts';
import type { ClusterAuth } from '../../../shared/ports/cluster-auth.ts';
import type { CheckoutRequest, CredentialBroker, Lease } from '../../../shared/ports/credential-broker.ts';
import type { SecretSource } from '../../../shared/ports/secret-source.ts';
import { createQueuedRun, makeTestApp, markLaunched, T0, type TestApp, vmTarget } from './harness.ts';

const SSH_KEY =
  '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA-canary\n-----END OPENSSH PRIVATE KEY-----\n';
const KUBECONFIG =
  'apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: onprem-canary-token\n';

class MapSecrets implements SecretSource {
  readonly asked: string[] = [];
  constructor(readonly values: Record<string, string>) {}
  async get(name: string): Promise<string> {
    this.asked.push(name);
    const value = this.values[name];
    if (value === undefined) throw new NotFoundError(`No secret named ${name}`);
    return value;
  }
}

class FakeBroker implements CredentialBroker {
  readonly checkouts: CheckoutRequest[] = [];
  readonly checkins: string[] = [];
  async checkout(request: CheckoutRequest): Promise<Lease> {
    this.checkouts.push(request);
    return { id: `req-${this.checkouts.length}`, username: 'pgadmin_jit', password: 'jit-canary-pw' };
  }
  async checkin(leaseId: string): Promise<void> {
    this.checkins.push(leaseId);
  }
}

const cluster = (provider: ClusterTarget['provider'], extra: Partial<ClusterTarget> = {}): Target => ({
  id: `k-${provider}`,
  kind: 'cluster',
  cloud: provider === 'eks' ? 'aws' : 'local',
  name: 'k',
  provider,
  credentialsRef: 'kube/prod',
  createdAt: T0,
  updatedAt: T0,
  ...extra,
});

const database = (extra: Partial<Extract<Target, { kind: 'database' }>>): Target => ({
  id: 'db-1',
  kind: 'database',
  cloud: 'local',
  name: 'db',
  engine: 'postgresql',
  endpoint: { host: 'pg.internal' },
  source: 'registered',
  managedAccount: 'pg-prod/dbadmin',
  createdAt: T0,
  updatedAt: T0,
  ...extra,
});

describe('connection material in prepared tasks', () => {
  let app: TestApp;
  let secrets: MapSecrets;
  let broker: FakeBroker;
  const prepared: string[] = [];
  const clusterAuth: ClusterAuth = {
    prepare: async (target) => {
      prepared.push(target.id);
      return 'apiVersion: v1\nusers:\n- name: u\n  user:\n    token: minted-canary\n';
    },
  };

  const deps = (settings: Record<string, string> = {}) => ({
    store: app.store,
    targets: app.targets,
    assets: app.deps.assets,
    secrets,
    clock: app.clock,
    clusterAuth,
    credentials: broker,
    settings: { ...app.deps.settings, ...settings },
  });

  const runFor = async (target: Target, kind: Run['kind'], extra: Partial<Run> = {}): Promise<Run> => {
    await app.targets.putTarget(target);
    return createQueuedRun(app.store, app.clock, {
      id: `run-${target.id}`,
      kind,
      targetId: target.id,
      asset: 'hello/site.yml',
      ...extra,
    });
  };

  beforeEach(() => {
    app = makeTestApp();
    secrets = new MapSecrets({
      'ssh/aws-key': SSH_KEY,
      'ssh/gcp-key': SSH_KEY,
      'kube/prod': KUBECONFIG,
      'db/admin': JSON.stringify({ username: 'postgres', password: 'stored-canary-pw' }),
      'portainer/token': 'ptr_canary',
    });
    broker = new FakeBroker();
    prepared.length = 0;
  });
  afterEach(() => app.close());

  it('gives an AWS VM the SSH key named by ansible_ssh_key_sm_name, as a 0600 file for the shim', async () => {
    const run = await runFor(vmTarget('vm-aws', { cloud: 'aws' }), 'vm', { sshUser: 'ec2-user' });
    const task = await prepareTask(deps({ ansible_ssh_key_sm_name: 'ssh/aws-key' }), run);

    expect(task.spec.sshKeyEnv).toBe('RW_SSH_KEY');
    expect(task.secretEnv.RW_SSH_KEY).toBe(SSH_KEY);
    expect(task.secretRefs.RW_SSH_KEY).toBe('ssh/aws-key');
    expect(task.spec.inventory.all.hosts['vm-aws']).toMatchObject({ ansible_user: 'ec2-user' });
    expect(JSON.stringify(task.spec)).not.toContain('canary');
  });

  it('falls back to the legacy ansible_ssh_key_secret on AWS and names the setting when the key is missing', async () => {
    const run = await runFor(vmTarget('vm-aws', { cloud: 'aws' }), 'vm');
    const error = await prepareTask(deps(), run).catch((e: unknown) => e);

    expect(secrets.asked).toEqual(['AWS_KEY']);
    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect((error as Error).message).toContain('verify ansible_ssh_key_sm_name is set');
  });

  it('asks for gcp_ssh_key_secret_name on GCP, and only references the key when the backend resolves it', async () => {
    const run = await runFor(vmTarget('vm-gcp', { cloud: 'gcp' }), 'vm');
    await expect(prepareTask(deps(), run)).rejects.toThrow(/set gcp_ssh_key_secret_name/);

    const task = await prepareTask(deps({ gcp_ssh_key_secret_name: 'ssh/gcp-key' }), run, {
      resolveSecrets: false,
    });
    expect(task.secretEnv).toEqual({});
    expect(task.secretRefs).toEqual({ RW_SSH_KEY: 'ssh/gcp-key' });
    expect(secrets.asked).toEqual([]);
  });

  it("reads a GCP VM's key from the GCP source, and refuses naming gcp_project_id without one", async () => {
    const gcp = new MapSecrets({ 'ssh-gcp-key': SSH_KEY });
    const run = await runFor(vmTarget('vm-gcp', { cloud: 'gcp' }), 'vm');
    const settings = { gcp_ssh_key_secret_name: 'ssh-gcp-key' };

    const task = await prepareTask({ ...deps(settings), cloudSecrets: { gcp } }, run);
    expect(task.secretEnv.RW_SSH_KEY).toBe(SSH_KEY);
    expect(task.spec.sshKeyEnv).toBe('RW_SSH_KEY');
    expect(gcp.asked).toEqual(['ssh-gcp-key']);
    expect(secrets.asked).toEqual([]);

    // Without gcp_project_id (no Secret Manager built) the deployment's own store is asked, as for AWS VMs.
    secrets.values['ssh-gcp-key'] = 'own-store-key';
    const fallback = await prepareTask(deps(settings), run);
    expect(fallback.secretEnv.RW_SSH_KEY).toBe('own-store-key');
    expect(secrets.asked).toEqual(['ssh-gcp-key']);
    secrets.asked.length = 0;

    const missing = await prepareTask(
      { ...deps({ gcp_ssh_key_secret_name: 'nope' }), cloudSecrets: { gcp } },
      run,
    ).catch((e: unknown) => e);
    expect((missing as Error).message).toContain('roles/secretmanager.secretAccessor');
  });

  it("reads an Azure VM's key from Key Vault when azure_ssh_key_secret_name is set, never as a stored reference", async () => {
    const azure = new MapSecrets({ 'ssh-azure-key': SSH_KEY });
    const run = await runFor(vmTarget('vm-az', { cloud: 'azure' }), 'vm');

    const own = await prepareTask({ ...deps(), cloudSecrets: { azure } }, run);
    expect(own.spec.sshKeyEnv).toBeUndefined();
    expect(azure.asked).toEqual([]);

    const settings = { azure_ssh_key_secret_name: 'ssh-azure-key' };
    // Even for a backend that resolves stored secrets itself: none of them reads Key Vault.
    const task = await prepareTask({ ...deps(settings), cloudSecrets: { azure } }, run, {
      resolveSecrets: false,
    });
    expect(task.secretEnv.RW_SSH_KEY).toBe(SSH_KEY);
    expect(task.secretRefs.RW_SSH_KEY).toBeUndefined();
    expect(task.spec.sshKeyEnv).toBe('RW_SSH_KEY');
    expect(secrets.asked).toEqual([]);

    // Without azure_key_vault_url the deployment's own store is asked.
    secrets.values['ssh-azure-key'] = 'own-store-key';
    const fallback = await prepareTask(deps(settings), run);
    expect(fallback.secretEnv.RW_SSH_KEY).toBe('own-store-key');
    expect(secrets.asked).toEqual(['ssh-azure-key']);
    secrets.asked.length = 0;

    const missing = await prepareTask(
      { ...deps({ azure_ssh_key_secret_name: 'other-key' }), cloudSecrets: { azure } },
      run,
    ).catch((e: unknown) => e);
    expect((missing as Error).message).toContain(
      'could not be read: verify azure_ssh_key_secret_name is set',
    );
    expect(JSON.stringify(missing)).not.toContain('canary');
  });

  it('leaves on-prem and WinRM VMs to their own credentials', async () => {
    const run = await runFor(vmTarget('vm-win', { cloud: 'aws', connection: 'winrm' }), 'vm');
    const task = await prepareTask(deps(), run);
    expect(task.spec.sshKeyEnv).toBeUndefined();
    expect(task.spec.inventory.all.hosts['vm-win']).toMatchObject({ ansible_connection: 'winrm' });
  });

  it('token-prepares an EKS kubeconfig and hands it over as KUBECONFIG, never as a stored reference', async () => {
    const run = await runFor(cluster('eks', { region: 'eu-west-1', clusterName: 'prod' }), 'cluster_play');
    const task = await prepareTask(deps(), run, { resolveSecrets: false });

    expect(prepared).toEqual(['k-eks']);
    expect(task.spec.secretEnvNames).toEqual(['KUBECONFIG']);
    expect(task.secretEnv.KUBECONFIG).toContain('minted-canary');
    expect(task.secretRefs.KUBECONFIG).toBeUndefined();
  });

  it('keeps an on-prem kubeconfig as stored, and refuses a cluster with no credentialsRef', async () => {
    const run = await runFor(cluster('k3s'), 'k8s_op', { operation: { action: 'apply' } });
    const task = await prepareTask(deps(), run);
    expect(prepared).toEqual([]);
    expect(task.secretEnv.KUBECONFIG).toBe(KUBECONFIG);
    expect(task.secretRefs.KUBECONFIG).toBe('kube/prod');

    const bare = await runFor(
      cluster('kubeconfig', { id: 'k-bare', credentialsRef: undefined }),
      'cluster_play',
    );
    await expect(prepareTask(deps(), bare)).rejects.toThrow(/k-bare has no credentialsRef/);
  });

  it('checks out a registered database account just in time and records the lease on the run', async () => {
    const run = await runFor(database({}), 'database_play', { timeoutSeconds: 7200 });
    const task = await prepareTask(deps(), run);

    expect(broker.checkouts).toEqual([
      { account: 'pg-prod/dbadmin', reason: `remote-worker run ${run.id}`, durationMinutes: 125 },
    ]);
    expect(task.spec.extraVars).toMatchObject({
      db_login_host: 'pg.internal',
      db_login_port: 5432,
      db_login_user: 'pgadmin_jit',
      db_engine: 'postgresql',
    });
    expect(task.spec.secretVars).toContainEqual({ var: 'db_login_password', env: 'RW_DB_PASSWORD' });
    expect(task.secretEnv.RW_DB_PASSWORD).toBe('jit-canary-pw');
    const stored = await app.store.getRun(run.id);
    expect(stored?.credentialLease).toBe('req-1');
    expect(JSON.stringify(stored)).not.toContain('jit-canary-pw');
    expect(JSON.stringify(task.spec)).not.toContain('jit-canary-pw');
  });

  it('reads a provisioned database login from its stored secret, and the run’s own vars win', async () => {
    const run = await runFor(
      database({ source: 'provisioned', credentialsRef: 'db/admin', managedAccount: undefined }),
      'database_play',
      { extraVars: { db_login_port: 6543 } },
    );
    const task = await prepareTask(deps(), run);

    expect(broker.checkouts).toEqual([]);
    expect(task.spec.extraVars).toMatchObject({ db_login_user: 'postgres', db_login_port: 6543 });
    expect(task.secretEnv.RW_DB_PASSWORD).toBe('stored-canary-pw');
  });

  it('refuses a registered database when Password Safe is not configured, naming the settings', async () => {
    const run = await runFor(database({}), 'database_play');
    const error = await prepareTask({ ...deps(), credentials: undefined }, run).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect((error as Error).message).toContain('set password_safe_url, password_safe_api_key_secret');
  });

  it('gives a Portainer run PORTAINER_URL and PORTAINER_API_TOKEN, and refuses when unconfigured', async () => {
    const run = await createQueuedRun(app.store, app.clock, {
      id: 'run-ptr',
      kind: 'portainer',
      targetId: undefined,
      asset: 'hello/site.yml',
    } as never);
    await expect(prepareTask(deps(), run)).rejects.toThrow(/Portainer is not configured/);

    const task = await prepareTask(
      deps({
        portainer_url: 'https://portainer.internal:9443',
        portainer_api_token_secret: 'portainer/token',
      }),
      run,
    );
    expect(task.spec.env).toEqual({ PORTAINER_URL: 'https://portainer.internal:9443' });
    expect(task.spec.secretEnvNames).toEqual(['PORTAINER_API_TOKEN']);
    expect(task.secretEnv.PORTAINER_API_TOKEN).toBe('ptr_canary');
  });
});

describe('checking in a just-in-time checkout when the run ends', () => {
  let app: TestApp;
  let broker: FakeBroker;

  const withLease = async (id: string): Promise<Run> => {
    const run = await createQueuedRun(app.store, app.clock, { id });
    return app.store.updateRun(
      { ...run, credentialLease: `lease-${id}`, version: run.version + 1 },
      run.version,
    );
  };

  beforeEach(async () => {
    broker = new FakeBroker();
    app = makeTestApp();
    app = { ...app, deps: { ...app.deps, credentials: broker } };
    await app.targets.putTarget(vmTarget('vm-1'));
  });
  afterEach(() => app.close());

  it('checks in when the backend rejects the launch for good', async () => {
    const run = await withLease('run-1');
    app.launcher.failures.push(new LaunchRejectedError('image not found'));

    await dispatchRun(app.deps, run.id, 'dispatcher:m-1');

    expect((await app.store.getRun(run.id))?.state).toBe('failed');
    expect(broker.checkins).toEqual(['lease-run-1']);
  });

  it('checks in when the backend reports the task ended, even if cleanup fails', async () => {
    const run = await withLease('run-2');
    await markLaunched(app.store, app.clock, (await app.store.getRun(run.id)) as Run, {
      backend: 'local',
      handle: 'fake:run-2#1',
    });
    app.launcher.status = async () => ({ state: 'exited', exitCode: 0 });
    app.launcher.cleanup = async () => {
      throw new Error('backend down');
    };
    app.clock.advance(120_000);

    await syncBackends(app.deps, { staleAfterSeconds: 60, missingGraceSeconds: 60 });

    expect((await app.store.getRun(run.id))?.state).toBe('succeeded');
    expect(broker.checkins).toEqual(['lease-run-2']);
  });

  it('logs a failed check-in instead of failing the caller', async () => {
    broker.checkin = async () => {
      throw new Error('Password Safe unavailable');
    };
    await expect(releaseCredentials(app.deps, { id: 'r', credentialLease: 'x' })).resolves.toBeUndefined();
  });
});
