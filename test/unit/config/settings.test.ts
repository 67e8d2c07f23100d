import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  loadSettings,
  SETTING_KEYS,
  type Settings,
  settingsSchema,
} from '../../../shared/config/settings.ts';
import { SettingsInvalidError } from '../../../shared/domain/errors.ts';
import { type RunnerSettings, resolveRunner } from '../../../shared/domain/runner-resolution.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rw-settings-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const writeConfig = (name: string, content: string): string => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};

/** Run the loader and hand back its error, failing the test when it does not throw one. */
const loadError = (options: Parameters<typeof loadSettings>[0]): SettingsInvalidError => {
  try {
    loadSettings(options);
  } catch (error) {
    if (error instanceof SettingsInvalidError) return error;
    throw error;
  }
  throw new Error('expected loadSettings to throw SettingsInvalidError');
};

describe('loadSettings', () => {
  it('gives the documented defaults with no file and no variables', () => {
    const settings = loadSettings({ env: {} });

    expect(settings).toEqual({
      ansible_runner: 'local',
      k8s_runner: 'local',
      ansible_local_image: 'chrweav/ansible-winrm:latest',
      ansible_cloud_image: 'chrweav/ansible-cloud',
      k8s_runner_image: 'dtzar/helm-kubectl',
      ansible_ecs_assign_public_ip: false,
      ansible_ssh_key_secret: 'AWS_KEY',
      local_executor: 'auto',
      local_docker_cli: 'docker',
      relay_concurrency: 3,
      default_timeout_seconds: 3600,
      max_timeout_seconds: 86_400,
      dispatch_max_receive_count: 5,
      kubernetes_namespace: 'remote-worker',
      kubernetes_service_account: 'remote-worker-task',
      poll_interval_seconds: 3,
      status_unknown_grace_seconds: 300,
      cleanup_grace_seconds: 30,
      password_safe_checkout_minutes: 60,
      start_deadline_seconds: 900,
      launch_budget_ecs_per_second: 20,
      launch_budget_ecs_burst: 100,
      launch_budget_aci_per_second: 10,
      launch_budget_aci_burst: 200,
      launch_budget_gcp_per_second: 1,
      launch_budget_gcp_burst: 100,
      launch_budget_kubernetes_per_second: 5,
      launch_budget_kubernetes_burst: 10,
      launch_cap_gcp_running_executions: 1000,
      launch_cap_kubernetes_pods: 100,
      launch_cap_wait_seconds: 10,
    });
  });

  it('reads a JSON settings file', () => {
    const path = writeConfig(
      'settings.json',
      JSON.stringify({
        ansible_runner_aws: 'ecs',
        ansible_ecs_subnet_id: 'subnet-0123',
        ansible_ecs_security_group_ids: ['sg-0123456789abcdef0'],
        relay_concurrency: 8,
      }),
    );

    const settings = loadSettings({ env: { REMOTE_WORKER_CONFIG: path } });

    expect(settings).toMatchObject({
      ansible_runner_aws: 'ecs',
      ansible_ecs_subnet_id: 'subnet-0123',
      ansible_ecs_security_group_ids: ['sg-0123456789abcdef0'],
      relay_concurrency: 8,
      ansible_runner: 'local',
    });
  });

  it.each(['settings.yaml', 'settings.yml'])('reads a YAML settings file (%s)', (name) => {
    const path = writeConfig(
      name,
      [
        'k8s_runner_gcp: gcp',
        'gcp_project_id: my-project',
        'ansible_ecs_assign_public_ip: true',
        'ansible_ecs_security_group_ids: sg-0123456789abcdef0, sg-89abcdef',
        'portainer_allowed_source_cidrs:',
        '  - 203.0.113.7/32',
        '  - 2001:db8::/32',
        '# left blank: means unset',
        'ansible_ecs_cluster:',
      ].join('\n'),
    );

    const settings = loadSettings({ env: { REMOTE_WORKER_CONFIG: path } });

    expect(settings).toMatchObject({
      k8s_runner_gcp: 'gcp',
      gcp_project_id: 'my-project',
      ansible_ecs_assign_public_ip: true,
      ansible_ecs_security_group_ids: ['sg-0123456789abcdef0', 'sg-89abcdef'],
      portainer_allowed_source_cidrs: ['203.0.113.7/32', '2001:db8::/32'],
    });
    expect(settings).not.toHaveProperty('ansible_ecs_cluster');
  });

  it('treats an empty YAML file as no settings', () => {
    const path = writeConfig('empty.yaml', '# nothing yet\n');

    expect(loadSettings({ env: { REMOTE_WORKER_CONFIG: path } })).toEqual(loadSettings({ env: {} }));
  });

  it('lets an upper-cased environment variable override the file, coercing numbers and booleans', () => {
    const path = writeConfig(
      'override.json',
      JSON.stringify({ ansible_runner_aws: 'aci', relay_concurrency: 8, local_storage_path: '/srv/assets' }),
    );

    const settings = loadSettings({
      env: {
        REMOTE_WORKER_CONFIG: path,
        ANSIBLE_RUNNER_AWS: 'ecs',
        RELAY_CONCURRENCY: '12',
        ANSIBLE_ECS_ASSIGN_PUBLIC_IP: 'true',
        DEFAULT_TIMEOUT_SECONDS: '900',
        ANSIBLE_ECS_SECURITY_GROUP_IDS: 'sg-0123456789abcdef0,sg-89abcdef',
      },
    });

    expect(settings).toMatchObject({
      ansible_runner_aws: 'ecs',
      relay_concurrency: 12,
      ansible_ecs_assign_public_ip: true,
      default_timeout_seconds: 900,
      ansible_ecs_security_group_ids: ['sg-0123456789abcdef0', 'sg-89abcdef'],
      local_storage_path: '/srv/assets',
    });
  });

  it('reads only the upper-cased name, not the key itself', () => {
    const settings = loadSettings({ env: { ansible_runner: 'ecs' } });

    expect(settings.ansible_runner).toBe('local');
  });

  it('reads the docker executor volumes as a list and refuses one over /ansible', () => {
    const settings = loadSettings({
      env: { LOCAL_DOCKER_VOLUMES: '/srv/certs:/etc/ssl/certs:ro, /data:/data' },
    });
    const error = loadError({ env: { LOCAL_DOCKER_VOLUMES: '/srv/x:/ansible/x' } });

    expect(settings.local_docker_volumes).toEqual(['/srv/certs:/etc/ssl/certs:ro', '/data:/data']);
    expect(error.message).toContain('local_docker_volumes');
    expect(error.message).toContain('must not mount over /ansible');
  });

  it('treats an empty environment variable as unset', () => {
    const path = writeConfig('keep.json', JSON.stringify({ k8s_runner: 'ecs' }));

    const settings = loadSettings({
      env: { REMOTE_WORKER_CONFIG: path, K8S_RUNNER: '', RELAY_CONCURRENCY: '' },
    });

    expect(settings.k8s_runner).toBe('ecs');
    expect(settings.relay_concurrency).toBe(3);
  });

  it('ignores an empty REMOTE_WORKER_CONFIG', () => {
    const settings = loadSettings({ env: { REMOTE_WORKER_CONFIG: '' }, readFile: () => '{"nope": 1}' });

    expect(settings.ansible_runner).toBe('local');
  });

  it('reads through the injected readFile', () => {
    const read: string[] = [];
    const readFile = (path: string) => {
      read.push(path);
      return '{"ansible_runner": "gcp"}';
    };

    const settings = loadSettings({ env: { REMOTE_WORKER_CONFIG: '/etc/rw/settings.json' }, readFile });

    expect(read).toEqual(['/etc/rw/settings.json']);
    expect(settings.ansible_runner).toBe('gcp');
  });

  it('lists every problem in one error, each naming its key and source', () => {
    const path = writeConfig(
      'bad.yaml',
      ['ansible_runner: ec2', 'relay_concurrency: 100', 'portainer_url: ftp://portainer.lan'].join('\n'),
    );

    const error = loadError({
      env: {
        REMOTE_WORKER_CONFIG: path,
        DEFAULT_TIMEOUT_SECONDS: 'an hour',
        ANSIBLE_ECS_ASSIGN_PUBLIC_IP: 'maybe',
        ANSIBLE_ECS_SECURITY_GROUP_IDS: 'sg-0123456789abcdef0,default',
      },
    });

    expect(error.code).toBe('settings_invalid');
    expect(error.problems.map((p) => p.path).sort()).toEqual([
      'ansible_ecs_assign_public_ip',
      'ansible_ecs_security_group_ids.1',
      'ansible_runner',
      'default_timeout_seconds',
      'portainer_url',
      'relay_concurrency',
    ]);
    const byPath = new Map(error.problems.map((p) => [p.path, p.message]));
    expect(byPath.get('ansible_runner')).toContain(`from ${path}`);
    expect(byPath.get('relay_concurrency')).toContain(`from ${path}`);
    expect(byPath.get('default_timeout_seconds')).toContain('from env DEFAULT_TIMEOUT_SECONDS');
    expect(byPath.get('ansible_ecs_assign_public_ip')).toContain('from env ANSIBLE_ECS_ASSIGN_PUBLIC_IP');
    expect(byPath.get('ansible_ecs_security_group_ids.1')).toContain('security group id');
    expect(error.message).toMatch(/^Invalid settings: /);
    expect(error.message).toContain('relay_concurrency');
  });

  it('rejects an unknown key in the file, naming it and the key it was probably meant to be', () => {
    const path = writeConfig('typo.json', JSON.stringify({ ansible_runer_aws: 'ecs', totally_unknown: 1 }));

    const error = loadError({ env: { REMOTE_WORKER_CONFIG: path } });

    expect(error.problems).toEqual([
      {
        path: 'ansible_runer_aws',
        message: `unknown setting (from ${path}); did you mean ansible_runner_aws?`,
      },
      { path: 'totally_unknown', message: `unknown setting (from ${path})` },
    ]);
  });

  it('fails when the file REMOTE_WORKER_CONFIG names does not exist', () => {
    const path = join(dir, 'missing.yaml');

    const error = loadError({ env: { REMOTE_WORKER_CONFIG: path } });

    expect(error.problems).toEqual([
      { path: 'REMOTE_WORKER_CONFIG', message: `settings file ${path} does not exist` },
    ]);
  });

  it('fails on a file that is not valid JSON', () => {
    const path = writeConfig('broken.json', '{ "ansible_runner": ');

    const error = loadError({ env: { REMOTE_WORKER_CONFIG: path } });

    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]?.path).toBe('REMOTE_WORKER_CONFIG');
    expect(error.problems[0]?.message).toContain(`settings file ${path} is not valid JSON`);
  });

  it('fails on a file that does not hold an object', () => {
    const path = writeConfig('list.yaml', '- ansible_runner\n');

    const error = loadError({ env: { REMOTE_WORKER_CONFIG: path } });

    expect(error.problems).toEqual([
      { path: 'REMOTE_WORKER_CONFIG', message: `settings file ${path} must hold an object of settings` },
    ]);
  });

  it('rejects a default timeout above the maximum', () => {
    const error = loadError({ env: { DEFAULT_TIMEOUT_SECONDS: '7200', MAX_TIMEOUT_SECONDS: '3600' } });

    expect(error.problems).toEqual([
      {
        path: 'default_timeout_seconds',
        message: 'must not exceed max_timeout_seconds (3600) (from env DEFAULT_TIMEOUT_SECONDS)',
      },
    ]);
  });

  it('rejects an empty string in the file rather than treating it as a value', () => {
    const path = writeConfig('blank.json', JSON.stringify({ ansible_ecs_subnet_id: '' }));

    const error = loadError({ env: { REMOTE_WORKER_CONFIG: path } });

    expect(error.problems.map((p) => p.path)).toEqual(['ansible_ecs_subnet_id']);
  });

  it('rejects a relay_concurrency outside 1..64', () => {
    expect(loadError({ env: { RELAY_CONCURRENCY: '0' } }).problems[0]?.path).toBe('relay_concurrency');
    expect(loadSettings({ env: { RELAY_CONCURRENCY: '64' } }).relay_concurrency).toBe(64);
  });
});

describe('settingsSchema', () => {
  it('knows every key the seeds and the design name', () => {
    const contract = [
      'ansible_runner',
      'ansible_runner_aws',
      'ansible_runner_azure',
      'ansible_runner_gcp',
      'ansible_runner_portainer',
      'k8s_runner',
      'k8s_runner_aws',
      'k8s_runner_azure',
      'k8s_runner_gcp',
      'ansible_local_image',
      'ansible_cloud_image',
      'k8s_runner_image',
      'ansible_ecs_cluster',
      'ansible_ecs_subnet_id',
      'ansible_ecs_security_group_ids',
      'ansible_ecs_assign_public_ip',
      'ansible_ecs_execution_role_arn',
      'ansible_aci_subnet_id',
      'ansible_aci_acr_server',
      'ansible_aci_acr_username',
      'ansible_aci_acr_password_secret',
      'azure_subscription_id',
      'azure_resource_group',
      'azure_location',
      'gcp_project_id',
      'gcp_region',
      'gcp_ansible_cloud_run_region',
      'gcp_ansible_vpc_connector',
      'ansible_ssh_key_sm_name',
      'gcp_ssh_key_secret_name',
      'ansible_ssh_key_secret',
      'local_storage_path',
      'local_executor',
      'local_docker_cli',
      'local_docker_volumes',
      'relay_concurrency',
      'default_timeout_seconds',
      'max_timeout_seconds',
      'dispatch_max_receive_count',
      'portainer_url',
      'portainer_api_token_secret',
      'portainer_allowed_source_cidrs',
      // The Kubernetes executor peer's settings, and the poller's.
      'kubernetes_namespace',
      'kubernetes_kubeconfig',
      'kubernetes_service_account',
      'kubernetes_pull_secrets',
      'poll_interval_seconds',
      'status_unknown_grace_seconds',
      'cleanup_grace_seconds',
      // Just-in-time checkout of registered databases' managed accounts.
      'password_safe_url',
      'password_safe_api_key_secret',
      'password_safe_runas',
      'password_safe_checkout_minutes',
      // Asset storage: the active backend, the object stores and the read URLs' lifetime.
      'storage_backend',
      'asset_s3_bucket',
      'asset_s3_prefix',
      'azure_storage_account_url',
      'azure_storage_container',
      'azure_storage_prefix',
      'azure_storage_key_secret',
      'gcs_bucket',
      'gcs_prefix',
      'start_deadline_seconds',
      // Local mode's ECS runner.
      'ansible_ecs_task_definitions',
      'ansible_ecs_log_group',
      // On-prem hypervisor integrations (the seeds' Settings → Integrations).
      ...['proxmox', 'vsphere', 'hyperv', 'xcpng', 'nutanix'].flatMap((h) =>
        ['enabled', 'host', 'user', 'password_secret'].map((k) => `${h}_${k}`),
      ),
      'proxmox_token_secret',
      // Cloud VM discovery.
      'discovery_clouds',
      'discovery_aws_regions',
      'discovery_azure_resource_groups',
      'discovery_gcp_zones',
      'discovery_refresh_seconds',
      // Azure VMs' SSH keys in Key Vault (GCP's are gcp_ssh_key_secret_name in gcp_project_id).
      'azure_key_vault_url',
      'azure_ssh_key_secret_name',
      // Launch budgets per backend (issue 16, item 2).
      ...['ecs', 'aci', 'gcp', 'kubernetes'].flatMap((b) => [
        `launch_budget_${b}_per_second`,
        `launch_budget_${b}_burst`,
      ]),
      // Launch caps: what runs at once (issue 16, item 2).
      'launch_cap_gcp_running_executions',
      'launch_cap_kubernetes_pods',
      'launch_cap_wait_seconds',
    ];

    expect([...SETTING_KEYS].sort()).toEqual([...contract].sort());
  });

  it('is strict about booleans and numbers in a file', () => {
    const result = settingsSchema().safeParse({
      relay_concurrency: '3',
      ansible_ecs_assign_public_ip: 'true',
    });

    expect(result.success).toBe(false);
  });

  it('produces settings that runner resolution accepts', () => {
    expectTypeOf<Settings>().toExtend<RunnerSettings>();
    const settings = loadSettings({ env: { K8S_RUNNER_AWS: 'ecs' } });

    const target = {
      id: 'eks-1',
      name: 'prod',
      kind: 'cluster' as const,
      cloud: 'aws' as const,
      provider: 'eks' as const,
      createdAt: '2025-01-01T00:00:00.000Z',
      updatedAt: '2025-01-01T00:00:00.000Z',
    };

    const result = resolveRunner({ kind: 'k8s_op', target, extraVars: {}, secrets: [] }, settings, {
      relayAvailable: true,
    });

    expect(result).toEqual({
      ok: false,
      code: 'runner_not_configured',
      reason:
        'Kubernetes ECS runner is not configured: set ansible_ecs_subnet_id, ansible_ecs_execution_role_arn',
      missingKeys: ['ansible_ecs_subnet_id', 'ansible_ecs_execution_role_arn'],
    });
  });
});

describe('loadSettings: every setting checked at start-up, naming its key', () => {
  const kubeconfig = () =>
    writeConfig(
      `kubeconfig-${Math.random().toString(36).slice(2)}.yaml`,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{ name: c, cluster: { server: "https://127.0.0.1:6443" } }]',
        'users: [{ name: u, user: { token: do-not-quote-me } }]',
        'contexts: [{ name: x, context: { cluster: c, user: u } }]',
        'current-context: x',
      ].join('\n'),
    );

  it.each([
    ['KUBERNETES_NAMESPACE', 'Remote_Worker', 'kubernetes_namespace', 'DNS-1123 label'],
    ['KUBERNETES_NAMESPACE', 'a'.repeat(64), 'kubernetes_namespace', 'DNS-1123 label'],
    ['KUBERNETES_SERVICE_ACCOUNT', 'Task SA', 'kubernetes_service_account', 'DNS-1123 subdomain'],
    [
      'KUBERNETES_PULL_SECRETS',
      'ok,Not OK',
      'kubernetes_pull_secrets.1',
      'Not OK is not a DNS-1123 subdomain',
    ],
  ])('refuses %s=%s, naming %s', (name, value, path, message) => {
    const error = loadError({ env: { [name]: value } });

    expect(error.problems).toEqual([{ path, message: expect.stringContaining(message) }]);
    expect(error.problems[0]?.message).toContain(`from env ${name}`);
  });

  const ACI_SUBNET =
    '/subscriptions/00000000-0000-4000-8000-000000000001/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/vnet/subnets/aci-a';

  it.each([
    ['ANSIBLE_ECS_SUBNET_ID', 'subnet-0a1b2c3d,sg-0a1b2c3d', 'ansible_ecs_subnet_id'],
    [
      'ANSIBLE_ECS_SUBNET_ID',
      'arn:aws:ec2:eu-west-1:123456789012:subnet/subnet-0a1b2c3d',
      'ansible_ecs_subnet_id',
    ],
    ['ANSIBLE_ACI_SUBNET_ID', `${ACI_SUBNET},aci-b`, 'ansible_aci_subnet_id'],
    ['GCP_ANSIBLE_VPC_CONNECTOR', 'RW_Connector', 'gcp_ansible_vpc_connector'],
    ['GCP_ANSIBLE_VPC_CONNECTOR', 'projects/p/connectors/c', 'gcp_ansible_vpc_connector'],
  ])('refuses a network id of the wrong shape: %s=%s', (name, value, path) => {
    const error = loadError({ env: { [name]: value } });

    expect(error.problems.map((p) => p.path)).toEqual([path]);
    expect(error.problems[0]?.message).toContain(`from env ${name}`);
  });

  it('accepts the network ids the clouds hand out, alone or comma-separated', () => {
    const settings = loadSettings({
      env: {
        ANSIBLE_ECS_SUBNET_ID: 'subnet-0a1b2c3d, subnet-0123456789abcdef0',
        ANSIBLE_ACI_SUBNET_ID: ` ${ACI_SUBNET} ,${ACI_SUBNET.replace('aci-a', 'aci-b')},`,
        GCP_ANSIBLE_VPC_CONNECTOR: 'rw-connector',
      },
    });

    expect(settings.gcp_ansible_vpc_connector).toBe('rw-connector');
    expect(
      loadSettings({ env: { GCP_ANSIBLE_VPC_CONNECTOR: 'projects/p/locations/europe-west4/connectors/c1' } })
        .gcp_ansible_vpc_connector,
    ).toBe('projects/p/locations/europe-west4/connectors/c1');
  });

  it('refuses a kubernetes_kubeconfig that names no file, naming the key instead of a bare ENOENT', () => {
    const missing = join(dir, 'no-such-kubeconfig.yaml');

    const error = loadError({ env: { KUBERNETES_KUBECONFIG: missing } });

    expect(error.problems).toEqual([
      {
        path: 'kubernetes_kubeconfig',
        message: `names ${missing}, which does not exist (from env KUBERNETES_KUBECONFIG)`,
      },
    ]);
  });

  it.each([
    ['not YAML', '{ [', 'is not YAML'],
    ['not a kubeconfig', 'token: do-not-quote-me\n', 'lists no clusters'],
    ['without a current context', 'clusters: [{ name: c }]\ntoken: do-not-quote-me\n', 'no current-context'],
  ])('refuses a kubernetes_kubeconfig file that is %s, never quoting it', (_what, content, message) => {
    const path = writeConfig(`bad-kubeconfig-${message.length}.yaml`, content);

    const error = loadError({ env: { KUBERNETES_KUBECONFIG: path } });

    expect(error.problems.map((p) => p.path)).toEqual(['kubernetes_kubeconfig']);
    expect(error.message).toContain(message);
    expect(error.message).not.toContain('do-not-quote-me');
  });

  it('accepts a readable kubeconfig', () => {
    const path = kubeconfig();

    expect(loadSettings({ env: { KUBERNETES_KUBECONFIG: path } }).kubernetes_kubeconfig).toBe(path);
  });

  it('refuses Password Safe half configured: the URL without the API key secret and the run-as user', () => {
    const error = loadError({ env: { PASSWORD_SAFE_URL: 'https://ps.example/BeyondTrust/api/public/v3' } });

    expect(error.problems.map((p) => p.path).sort()).toEqual([
      'password_safe_api_key_secret',
      'password_safe_runas',
    ]);
  });

  it('lists a bad name and a missing kubeconfig in one error', () => {
    const error = loadError({
      env: { KUBERNETES_NAMESPACE: 'Bad_NS', KUBERNETES_KUBECONFIG: join(dir, 'absent.yaml') },
    });

    expect(error.problems.map((p) => p.path).sort()).toEqual([
      'kubernetes_kubeconfig',
      'kubernetes_namespace',
    ]);
  });

  it('leaves a runner whose settings are simply absent to be refused at run time', () => {
    const settings = loadSettings({ env: { K8S_RUNNER: 'kubernetes', ANSIBLE_RUNNER_GCP: 'gcp' } });

    expect(settings.kubernetes_kubeconfig).toBeUndefined();
    expect(settings.gcp_project_id).toBeUndefined();
  });
});
