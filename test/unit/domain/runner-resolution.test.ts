import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RUN_KINDS, RUNNERS, type RunKind, type Runner } from '../../../shared/domain/run.ts';
import {
  type RunnerResolution,
  type RunnerResolutionContext,
  type RunnerSettings,
  resolveRunner,
} from '../../../shared/domain/runner-resolution.ts';
import {
  CLOUDS,
  type ClusterTarget,
  type DatabaseTarget,
  HOSTING_CLOUDS,
  type Target,
  type VmTarget,
} from '../../../shared/domain/target.ts';

const AT = '2025-01-01T00:00:00.000Z';
const LOCAL_IMAGE = 'registry.example/ansible-winrm:1';
const CLOUD_IMAGE = 'registry.example/ansible-cloud:1';
const K8S_IMAGE = 'registry.example/helm-kubectl:1';

/** Every runner set to local, as the defaults are, but with images we can tell apart. */
const baseSettings: RunnerSettings = {
  ansible_runner: 'local',
  k8s_runner: 'local',
  ansible_local_image: LOCAL_IMAGE,
  ansible_cloud_image: CLOUD_IMAGE,
  k8s_runner_image: K8S_IMAGE,
};

/** Every cloud backend has its shared plumbing. */
const configured = (overrides: Partial<RunnerSettings> = {}): RunnerSettings => ({
  ...baseSettings,
  ansible_ecs_subnet_id: 'subnet-0123',
  ansible_ecs_execution_role_arn: 'arn:aws:iam::123456789012:role/exec',
  azure_resource_group: 'rg-runners',
  gcp_project_id: 'my-project',
  gcp_region: 'europe-west1',
  ...overrides,
});

const relayUp: RunnerResolutionContext = { relayAvailable: true };

const vm = (overrides: Partial<VmTarget> = {}): VmTarget => ({
  id: 'vm-1',
  name: 'web-1',
  kind: 'vm',
  cloud: 'aws',
  address: '10.0.0.5',
  connection: 'ssh',
  createdAt: AT,
  updatedAt: AT,
  ...overrides,
});

const cluster = (overrides: Partial<ClusterTarget> = {}): ClusterTarget => ({
  id: 'cluster-1',
  name: 'prod',
  kind: 'cluster',
  cloud: 'aws',
  provider: 'eks',
  createdAt: AT,
  updatedAt: AT,
  ...overrides,
});

const database = (overrides: Partial<DatabaseTarget> = {}): DatabaseTarget => ({
  id: 'db-1',
  name: 'orders',
  kind: 'database',
  cloud: 'aws',
  engine: 'postgresql',
  endpoint: { host: 'orders.internal', port: 5432 },
  source: 'provisioned',
  createdAt: AT,
  updatedAt: AT,
  ...overrides,
});

const run = (kind: RunKind, target?: Target, extraVars: Record<string, unknown> = {}) =>
  target === undefined ? { kind, extraVars, secrets: [] } : { kind, target, extraVars, secrets: [] };

const refused = (reason: string): RunnerResolution => ({ ok: false, code: 'runner_refused', reason });

describe('resolveRunner', () => {
  describe('vm runs', () => {
    it('uses ansible_runner_<cloud> when it is set', () => {
      // Arrange
      const settings = configured({ ansible_runner: 'gcp', ansible_runner_aws: 'ecs' });
      // Act
      const result = resolveRunner(run('vm', vm({ cloud: 'aws' })), settings, relayUp);
      // Assert
      expect(result).toEqual({ ok: true, runner: 'ecs', image: LOCAL_IMAGE });
    });

    it('falls back to the global ansible_runner when ansible_runner_<cloud> is unset', () => {
      const settings = configured({ ansible_runner: 'aci', ansible_runner_aws: 'ecs' });

      const result = resolveRunner(run('vm', vm({ cloud: 'azure' })), settings, relayUp);

      expect(result).toEqual({ ok: true, runner: 'aci', image: LOCAL_IMAGE });
    });

    it('falls back to the global ansible_runner for an oci VM, which has no per-cloud key', () => {
      const settings = configured({ ansible_runner: 'gcp' });

      const result = resolveRunner(run('vm', vm({ cloud: 'oci' })), settings, relayUp);

      expect(result).toEqual({ ok: true, runner: 'gcp', image: LOCAL_IMAGE });
    });

    it.each(RUNNERS)('uses ansible_local_image on the %s runner', (runner) => {
      const settings = configured({ ansible_runner_gcp: runner });

      const result = resolveRunner(run('vm', vm({ cloud: 'gcp' })), settings, relayUp);

      expect(result).toEqual({ ok: true, runner, image: LOCAL_IMAGE });
    });

    it('runs an on-prem hypervisor VM on the local runner', () => {
      const result = resolveRunner(run('vm', vm({ cloud: 'local' })), configured(), relayUp);

      expect(result).toEqual({ ok: true, runner: 'local', image: LOCAL_IMAGE });
    });

    it('refuses an on-prem hypervisor VM that resolves to a cloud runner', () => {
      const settings = configured({ ansible_runner: 'ecs' });

      const result = resolveRunner(run('vm', vm({ cloud: 'local' })), settings, relayUp);

      expect(result).toEqual(
        refused(
          'Only the local runner can reach on-prem hypervisor VMs, but ansible_runner resolves to ecs: set ansible_runner to local',
        ),
      );
    });

    it('forwards a plaintext WinRM ansible_password on the local runner', () => {
      const target = vm({ cloud: 'azure', connection: 'winrm', os: 'windows' });

      const result = resolveRunner(run('vm', target, { ansible_password: 'hunter2' }), configured(), relayUp);

      expect(result).toEqual({ ok: true, runner: 'local', image: LOCAL_IMAGE });
    });

    it('refuses a plaintext ansible_password on a cloud runner and says to use a secret', () => {
      const settings = configured({ ansible_runner_azure: 'aci' });
      const target = vm({ cloud: 'azure', connection: 'winrm', os: 'windows' });

      const result = resolveRunner(run('vm', target, { ansible_password: 'hunter2' }), settings, relayUp);

      expect(result).toEqual(
        refused(
          'The aci runner does not forward a plaintext ansible_password extra var; only the local runner does. ' +
            'Use a secret: bind ansible_password to a named secret instead',
        ),
      );
    });

    it('refuses the WinRM plugin password aliases on a cloud runner too', () => {
      const settings = configured({ ansible_runner: 'ecs' });

      const result = resolveRunner(
        run('vm', vm({ connection: 'winrm' }), { ansible_winrm_password: 'hunter2' }),
        settings,
        relayUp,
      );

      expect(result).toMatchObject({ ok: false, code: 'runner_refused' });
      expect(result.ok ? '' : result.reason).toContain('plaintext ansible_winrm_password');
    });

    it('accepts a cloud runner when the WinRM password is bound with a secret', () => {
      const settings = configured({ ansible_runner_aws: 'ecs' });
      const input = {
        kind: 'vm' as const,
        target: vm({ connection: 'winrm' }),
        extraVars: { ansible_user: 'Administrator' },
        secrets: [{ var: 'ansible_password', secret: 'winrm-admin' }],
      };

      const result = resolveRunner(input, settings, relayUp);

      expect(result).toEqual({ ok: true, runner: 'ecs', image: LOCAL_IMAGE });
    });

    it('refuses a vm run against a cluster', () => {
      const result = resolveRunner(run('vm', cluster()), configured(), relayUp);

      expect(result).toEqual(refused('A vm run needs a vm target, but cluster-1 is a cluster'));
    });

    it('refuses a VM known only by node + VMID with the untargetable reason', () => {
      const target = vm({ cloud: 'local', node: 'pve1', vmid: 101 });
      const { address: _dropped, ...withoutAddress } = target;

      const result = resolveRunner(run('vm', withoutAddress), configured(), relayUp);

      expect(result).toEqual(
        refused(
          'This VM is recorded only by node + VMID, not an address: target it through its hypervisor group instead',
        ),
      );
    });

    it('refuses a virtual desktop with the untargetable reason', () => {
      const desktop: Target = {
        id: 'vd-1',
        name: 'seat-1',
        kind: 'virtual_desktop',
        cloud: 'azure',
        createdAt: AT,
        updatedAt: AT,
      };

      const result = resolveRunner(run('vm', desktop), configured(), relayUp);

      expect(result).toEqual(
        refused('A virtual desktop is a seat, not a host: no Ansible target exists behind it'),
      );
    });

    it('refuses a vm run without a target', () => {
      const result = resolveRunner(run('vm'), configured(), relayUp);

      expect(result).toEqual(refused('A vm run needs a target'));
    });
  });

  describe('k8s_op runs', () => {
    it('uses k8s_runner_<cloud> and k8s_runner_image', () => {
      const settings = configured({ k8s_runner: 'ecs', k8s_runner_gcp: 'gcp' });

      const result = resolveRunner(
        run('k8s_op', cluster({ cloud: 'gcp', provider: 'gke' })),
        settings,
        relayUp,
      );

      expect(result).toEqual({ ok: true, runner: 'gcp', image: K8S_IMAGE });
    });

    it('falls back to the global k8s_runner', () => {
      const settings = configured({ k8s_runner: 'ecs', k8s_runner_aws: 'aci' });

      const result = resolveRunner(
        run('k8s_op', cluster({ cloud: 'azure', provider: 'aks' })),
        settings,
        relayUp,
      );

      expect(result).toEqual({ ok: true, runner: 'ecs', image: K8S_IMAGE });
    });

    it('ignores the ansible runner settings', () => {
      const settings = configured({ ansible_runner: 'gcp', ansible_runner_aws: 'aci' });

      const result = resolveRunner(run('k8s_op', cluster({ cloud: 'aws' })), settings, relayUp);

      expect(result).toEqual({ ok: true, runner: 'local', image: K8S_IMAGE });
    });

    it('refuses an on-prem cluster on a cloud runner: only the relay reaches it', () => {
      const settings = configured({ k8s_runner: 'ecs' });

      const result = resolveRunner(
        run('k8s_op', cluster({ cloud: 'local', provider: 'k3s' })),
        settings,
        relayUp,
      );

      expect(result).toEqual(
        refused(
          'An on-prem cluster (cloud local) is reachable only from the relay, but k8s_runner resolves to ecs: set k8s_runner to local',
        ),
      );
    });

    it('runs an on-prem cluster on the relay', () => {
      const result = resolveRunner(
        run('k8s_op', cluster({ cloud: 'local', provider: 'kubeconfig' })),
        configured(),
        relayUp,
      );

      expect(result).toEqual({ ok: true, runner: 'local', image: K8S_IMAGE });
    });

    it('refuses an oci cluster: no runner resolves for oci', () => {
      const settings = configured({ k8s_runner: 'ecs' });

      const result = resolveRunner(
        run('k8s_op', cluster({ cloud: 'oci', provider: 'other' })),
        settings,
        relayUp,
      );

      expect(result).toEqual(refused('No runner resolves for oci: OCI-hosted clusters cannot be targeted'));
    });

    it('refuses a database target', () => {
      const result = resolveRunner(run('k8s_op', database()), configured(), relayUp);

      expect(result).toEqual(refused('A k8s_op run needs a cluster target, but db-1 is a database'));
    });
  });

  describe('cluster and database plays', () => {
    const NATIVE = { aws: 'ecs', azure: 'aci', gcp: 'gcp' } as const;

    describe.each(HOSTING_CLOUDS)('hosted on %s', (cloud) => {
      it("defaults to the cloud's native runner, not the global ansible_runner", () => {
        // The global runner is local: were it the fallback, the run would go to the relay.
        const settings = configured({ ansible_runner: 'local' });

        const clusterResult = resolveRunner(run('cluster_play', cluster({ cloud })), settings, relayUp);
        const databaseResult = resolveRunner(run('database_play', database({ cloud })), settings, relayUp);

        expect(clusterResult).toEqual({ ok: true, runner: NATIVE[cloud], image: CLOUD_IMAGE });
        expect(databaseResult).toEqual({ ok: true, runner: NATIVE[cloud], image: CLOUD_IMAGE });
      });

      it('rejects a local override for a cloud-hosted cluster', () => {
        const settings = configured({ [`ansible_runner_${cloud}`]: 'local' });

        const result = resolveRunner(run('cluster_play', cluster({ cloud })), settings, relayUp);

        expect(result).toEqual(
          refused(
            `A ${cloud}-hosted cluster's endpoint is private to its VPC and the local runner's egress cannot reach it: ` +
              `remove the ansible_runner_${cloud}: local override so the run uses ${NATIVE[cloud]} in-subnet`,
          ),
        );
      });

      it('rejects a local override for a cloud-hosted database', () => {
        const settings = configured({ [`ansible_runner_${cloud}`]: 'local' });

        const result = resolveRunner(run('database_play', database({ cloud })), settings, relayUp);

        expect(result).toEqual(
          refused(
            `A ${cloud}-hosted database's endpoint is private to its VPC and the local runner's egress cannot reach it: ` +
              `remove the ansible_runner_${cloud}: local override so the run uses ${NATIVE[cloud]} in-subnet`,
          ),
        );
      });
    });

    it('honours a cloud ansible_runner_<cloud> override', () => {
      const settings = configured({ ansible_runner_aws: 'gcp' });

      const result = resolveRunner(run('cluster_play', cluster({ cloud: 'aws' })), settings, relayUp);

      expect(result).toEqual({ ok: true, runner: 'gcp', image: CLOUD_IMAGE });
    });

    it('runs an on-prem cluster play on the relay with ansible_cloud_image', () => {
      const settings = configured({ ansible_runner: 'ecs' });

      const result = resolveRunner(
        run('cluster_play', cluster({ cloud: 'local', provider: 'k3s' })),
        settings,
        relayUp,
      );

      expect(result).toEqual({ ok: true, runner: 'local', image: CLOUD_IMAGE });
    });

    it('refuses an on-prem database play when no relay is reachable, saying why', () => {
      const target = database({ cloud: 'local', source: 'registered', managedAccount: 'pam/orders' });
      const context = { relayAvailable: false, relayUnavailableReason: 'no relay has polled for 10 minutes' };

      const result = resolveRunner(run('database_play', target), configured(), context);

      expect(result).toEqual(
        refused('No relay is reachable to run this on the local runner: no relay has polled for 10 minutes'),
      );
    });

    it('refuses an oci database: no runner resolves for oci', () => {
      const target = database({ cloud: 'oci', source: 'registered', managedAccount: 'pam/oci' });

      const result = resolveRunner(run('database_play', target), configured(), relayUp);

      expect(result).toEqual(refused('No runner resolves for oci: OCI-hosted databases cannot be targeted'));
    });

    it('refuses an oci cluster play', () => {
      const result = resolveRunner(
        run('cluster_play', cluster({ cloud: 'oci', provider: 'other' })),
        configured(),
        relayUp,
      );

      expect(result).toEqual(refused('No runner resolves for oci: OCI-hosted clusters cannot be targeted'));
    });

    it('refuses a database engine no runner image carries', () => {
      const result = resolveRunner(
        run('database_play', database({ engine: 'oracle' })),
        configured(),
        relayUp,
      );

      expect(result).toEqual(refused('No runner carries modules for the oracle engine'));
    });

    it('refuses a cluster play against a database', () => {
      const result = resolveRunner(run('cluster_play', database()), configured(), relayUp);

      expect(result).toEqual(refused('A cluster_play run needs a cluster target, but db-1 is a database'));
    });

    it('refuses a database play against a cluster', () => {
      const result = resolveRunner(run('database_play', cluster()), configured(), relayUp);

      expect(result).toEqual(
        refused('A database_play run needs a database target, but cluster-1 is a cluster'),
      );
    });

    it('refuses a cluster play without a target', () => {
      const result = resolveRunner(run('cluster_play'), configured(), relayUp);

      expect(result).toEqual(refused('A cluster_play run needs a target'));
    });
  });

  describe('portainer runs', () => {
    it('uses ansible_runner_portainer when it is set', () => {
      const settings = configured({ ansible_runner: 'ecs', ansible_runner_portainer: 'local' });

      const result = resolveRunner(run('portainer'), settings, relayUp);

      expect(result).toEqual({ ok: true, runner: 'local', image: LOCAL_IMAGE });
    });

    it('falls back to the global ansible_runner', () => {
      const settings = configured({ ansible_runner: 'aci', ansible_runner_azure: 'gcp' });

      const result = resolveRunner(run('portainer'), settings, relayUp);

      expect(result).toEqual({ ok: true, runner: 'aci', image: LOCAL_IMAGE });
    });

    it('refuses a target: the run acts on the one configured Portainer connection', () => {
      const result = resolveRunner(run('portainer', vm()), configured(), relayUp);

      expect(result).toEqual(
        refused('A portainer run takes no target: it acts on the one configured Portainer connection'),
      );
    });
  });

  describe('relay availability', () => {
    it('refuses a run resolving to local when no relay is reachable', () => {
      const context = { relayAvailable: false, relayUnavailableReason: 'the relay queue has no consumer' };

      const result = resolveRunner(run('vm', vm()), configured(), context);

      expect(result).toEqual(
        refused('No relay is reachable to run this on the local runner: the relay queue has no consumer'),
      );
    });

    it('says so without a reason when none is given', () => {
      const result = resolveRunner(run('portainer'), configured(), { relayAvailable: false });

      expect(result).toEqual(refused('No relay is reachable to run this on the local runner'));
    });

    it('does not affect a cloud runner', () => {
      const settings = configured({ ansible_runner_aws: 'ecs' });

      const result = resolveRunner(run('vm', vm()), settings, { relayAvailable: false });

      expect(result).toEqual({ ok: true, runner: 'ecs', image: LOCAL_IMAGE });
    });
  });

  describe('cloud backend configuration', () => {
    it('names both missing ECS keys for a k8s_op', () => {
      const settings = { ...baseSettings, k8s_runner: 'ecs' as const };

      const result = resolveRunner(run('k8s_op', cluster()), settings, relayUp);

      expect(result).toEqual({
        ok: false,
        code: 'runner_not_configured',
        reason:
          'Kubernetes ECS runner is not configured: set ansible_ecs_subnet_id, ansible_ecs_execution_role_arn',
        missingKeys: ['ansible_ecs_subnet_id', 'ansible_ecs_execution_role_arn'],
      });
    });

    it('names only the missing ECS key for an Ansible run', () => {
      const settings = { ...baseSettings, ansible_runner: 'ecs' as const, ansible_ecs_subnet_id: 'subnet-1' };

      const result = resolveRunner(run('vm', vm()), settings, relayUp);

      expect(result).toEqual({
        ok: false,
        code: 'runner_not_configured',
        reason: 'Ansible ECS runner is not configured: set ansible_ecs_execution_role_arn',
        missingKeys: ['ansible_ecs_execution_role_arn'],
      });
    });

    it('needs azure_resource_group for ACI', () => {
      const result = resolveRunner(run('cluster_play', cluster({ cloud: 'azure' })), baseSettings, relayUp);

      expect(result).toEqual({
        ok: false,
        code: 'runner_not_configured',
        reason: 'Ansible ACI runner is not configured: set azure_resource_group',
        missingKeys: ['azure_resource_group'],
      });
    });

    it('needs gcp_project_id and a region for Cloud Run, naming gcp_region', () => {
      const settings = { ...baseSettings, k8s_runner_gcp: 'gcp' as const };

      const result = resolveRunner(run('k8s_op', cluster({ cloud: 'gcp' })), settings, relayUp);

      expect(result).toEqual({
        ok: false,
        code: 'runner_not_configured',
        reason: 'Kubernetes Cloud Run runner is not configured: set gcp_project_id, gcp_region',
        missingKeys: ['gcp_project_id', 'gcp_region'],
      });
    });

    it('accepts gcp_ansible_cloud_run_region as the Cloud Run region', () => {
      const settings = {
        ...baseSettings,
        gcp_project_id: 'my-project',
        gcp_ansible_cloud_run_region: 'us-central1',
      };

      const result = resolveRunner(run('database_play', database({ cloud: 'gcp' })), settings, relayUp);

      expect(result).toEqual({ ok: true, runner: 'gcp', image: CLOUD_IMAGE });
    });

    it('counts a blank value as missing', () => {
      const settings = configured({ ansible_runner: 'aci', azure_resource_group: '  ' });

      const result = resolveRunner(run('portainer'), settings, relayUp);

      expect(result).toMatchObject({
        ok: false,
        code: 'runner_not_configured',
        missingKeys: ['azure_resource_group'],
      });
    });

    it('checks policy before configuration: an on-prem VM on an unconfigured ECS runner is refused', () => {
      const settings = { ...baseSettings, ansible_runner: 'ecs' as const };

      const result = resolveRunner(run('vm', vm({ cloud: 'local' })), settings, relayUp);

      expect(result).toMatchObject({ ok: false, code: 'runner_refused' });
    });
  });

  describe('properties', () => {
    const runner = fc.constantFrom(...RUNNERS);
    const cloud = fc.constantFrom(...CLOUDS);
    const text = fc.constant('value');
    const blank = fc.constantFrom('', ' ', undefined);
    const settingsWith = (maybeText: fc.Arbitrary<string | undefined>): fc.Arbitrary<RunnerSettings> =>
      fc.record(
        {
          ansible_runner: runner,
          ansible_runner_aws: runner,
          ansible_runner_azure: runner,
          ansible_runner_gcp: runner,
          ansible_runner_portainer: runner,
          k8s_runner: runner,
          k8s_runner_aws: runner,
          k8s_runner_azure: runner,
          k8s_runner_gcp: runner,
          ansible_local_image: fc.constant(LOCAL_IMAGE),
          ansible_cloud_image: fc.constant(CLOUD_IMAGE),
          k8s_runner_image: fc.constant(K8S_IMAGE),
          ansible_ecs_subnet_id: maybeText,
          ansible_ecs_execution_role_arn: maybeText,
          azure_resource_group: maybeText,
          gcp_project_id: maybeText,
          gcp_region: maybeText,
          gcp_ansible_cloud_run_region: maybeText,
        },
        {
          requiredKeys: [
            'ansible_runner',
            'k8s_runner',
            'ansible_local_image',
            'ansible_cloud_image',
            'k8s_runner_image',
            'ansible_ecs_subnet_id',
            'ansible_ecs_execution_role_arn',
            'azure_resource_group',
            'gcp_project_id',
            'gcp_region',
            'gcp_ansible_cloud_run_region',
          ],
        },
      );
    // Mostly configured, so that enough runs resolve for the properties about ok results to bite…
    const settingsArb = settingsWith(
      fc.oneof({ arbitrary: text, weight: 5 }, { arbitrary: blank, weight: 1 }),
    );
    // …and half unset, so that "not configured" comes up often.
    const sparseSettingsArb = settingsWith(fc.oneof(text, blank));
    const { address: _address, ...vmWithoutAddress } = vm();
    const targetArb: fc.Arbitrary<Target> = fc.oneof(
      // With and without an address, node and VMID, so untargetable VMs come up too.
      fc
        .record(
          {
            cloud,
            connection: fc.constantFrom('ssh', 'winrm', 'local'),
            address: fc.constant('10.0.0.9'),
            node: fc.constant('pve1'),
            vmid: fc.nat(),
          },
          { requiredKeys: ['cloud', 'connection'] },
        )
        .map((fields): Target => ({ ...vmWithoutAddress, ...fields })),
      fc
        .record({ cloud, provider: fc.constantFrom('eks', 'aks', 'gke', 'kubeconfig', 'k3s', 'other') })
        .map((fields): Target => ({ ...cluster(), ...fields })),
      fc
        .record({
          cloud,
          engine: fc.constantFrom('postgresql', 'mysql', 'mariadb', 'mssql', 'oracle', 'mongodb'),
          source: fc.constantFrom('provisioned', 'registered'),
        })
        .map((fields): Target => ({ ...database(), ...fields })),
      cloud.map(
        (c): Target => ({
          id: 'vd',
          name: 'vd',
          kind: 'virtual_desktop',
          cloud: c,
          createdAt: AT,
          updatedAt: AT,
        }),
      ),
    );
    const extraVarsArb = fc.dictionary(
      fc.constantFrom('ansible_password', 'ansible_winrm_pass', 'ansible_user', 'app_version'),
      fc.string(),
    );
    const contextArb: fc.Arbitrary<RunnerResolutionContext> = fc.record(
      { relayAvailable: fc.boolean(), relayUnavailableReason: fc.string() },
      { requiredKeys: ['relayAvailable'] },
    );
    const inputArb = fc.record(
      {
        kind: fc.constantFrom(...RUN_KINDS),
        target: targetArb,
        extraVars: extraVarsArb,
        secrets: fc.constant([]),
      },
      { requiredKeys: ['kind', 'extraVars', 'secrets'] },
    );

    // Each kind with a target it accepts, so that most runs get past the target checks.
    const matchedInputArb = fc.oneof(
      fc
        .record({ cloud, extraVars: extraVarsArb })
        .map(({ cloud: c, extraVars }) => run('vm', vm({ cloud: c }), extraVars)),
      cloud.map((c) => run('k8s_op', cluster({ cloud: c }))),
      cloud.map((c) => run('cluster_play', cluster({ cloud: c }))),
      cloud.map((c) => run('database_play', database({ cloud: c }))),
      fc.constant(run('portainer')),
    );

    it('is total: every input yields a well-formed result and never throws', () => {
      fc.assert(
        fc.property(
          inputArb,
          fc.oneof(settingsArb, sparseSettingsArb),
          contextArb,
          (input, settings, context) => {
            const result = resolveRunner(input, settings, context);

            if (result.ok) {
              expect(RUNNERS).toContain(result.runner);
            } else {
              expect(['runner_refused', 'runner_not_configured']).toContain(result.code);
              expect(result.reason.length).toBeGreaterThan(0);
            }
          },
        ),
        { numRuns: 2000 },
      );
    });

    it('never resolves a cluster or database play on a hosting cloud to local', () => {
      const hostedPlay = fc.record({
        kind: fc.constantFrom('cluster_play' as const, 'database_play' as const),
        cloud: fc.constantFrom(...HOSTING_CLOUDS),
      });
      fc.assert(
        fc.property(hostedPlay, settingsArb, contextArb, ({ kind, cloud: c }, settings, context) => {
          const target = kind === 'cluster_play' ? cluster({ cloud: c }) : database({ cloud: c });

          const result = resolveRunner(run(kind, target), settings, context);

          expect(result.ok && result.runner === 'local').toBe(false);
        }),
      );
    });

    it("gives every ok result the image its kind's setting names", () => {
      const expected: Record<RunKind, string> = {
        vm: LOCAL_IMAGE,
        portainer: LOCAL_IMAGE,
        k8s_op: K8S_IMAGE,
        cluster_play: CLOUD_IMAGE,
        database_play: CLOUD_IMAGE,
      };
      let resolved = 0;
      fc.assert(
        fc.property(matchedInputArb, settingsArb, contextArb, (input, settings, context) => {
          const result = resolveRunner(input, settings, context);

          if (result.ok) {
            resolved++;
            expect(result.image).toBe(expected[input.kind]);
          }
        }),
      );
      expect(resolved).toBeGreaterThan(0);
    });

    it('never resolves to local when no relay is reachable', () => {
      fc.assert(
        fc.property(inputArb, settingsArb, (input, settings) => {
          const result = resolveRunner(input, settings, { relayAvailable: false });

          expect(result.ok && result.runner === 'local').toBe(false);
        }),
      );
    });

    it('names every missing key in a "not configured" refusal', () => {
      let seen = 0;
      fc.assert(
        fc.property(matchedInputArb, sparseSettingsArb, contextArb, (input, settings, context) => {
          const result = resolveRunner(input, settings, context);

          if (result.ok || result.code !== 'runner_not_configured') return;
          seen++;
          const missing = result.missingKeys ?? [];
          expect(missing.length).toBeGreaterThan(0);
          for (const key of missing) {
            expect(result.reason).toContain(key);
            expect(String((settings as unknown as Record<string, unknown>)[key] ?? '')).toMatch(/^\s*$/);
          }
        }),
      );
      expect(seen).toBeGreaterThan(0);
    });

    it('only the local runner accepts a plaintext password for a vm run', () => {
      const vmInput = fc.record({
        target: fc.record({ cloud, connection: fc.constantFrom('ssh', 'winrm', 'local') }),
        password: fc.string(),
      });
      let accepted = 0;
      fc.assert(
        fc.property(vmInput, settingsArb, ({ target, password }, settings) => {
          const result = resolveRunner(
            run('vm', vm(target), { ansible_password: password }),
            settings,
            relayUp,
          );

          if (result.ok) {
            accepted++;
            expect(result.runner).toBe('local');
          }
        }),
      );
      expect(accepted).toBeGreaterThan(0);
    });

    it('resolves on-prem VMs and clusters only to the local runner', () => {
      const onPrem = fc.constantFrom<[RunKind, Target]>(
        ['vm', vm({ cloud: 'local' })],
        ['k8s_op', cluster({ cloud: 'local' })],
        ['cluster_play', cluster({ cloud: 'local' })],
        ['database_play', database({ cloud: 'local' })],
      );
      fc.assert(
        fc.property(onPrem, settingsArb, ([kind, target], settings) => {
          const result = resolveRunner(run(kind, target), settings, relayUp);

          if (result.ok) expect(result.runner).toBe<Runner>('local');
          else expect(result.code).toBe('runner_refused');
        }),
      );
    });
  });
});
