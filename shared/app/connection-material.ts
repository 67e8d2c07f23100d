import type { Settings } from '../config/settings.ts';
import { checkoutMinutes, managedAccountOf } from '../domain/checkout.ts';
import { LaunchRejectedError, NotFoundError, ValidationError } from '../domain/errors.ts';
import { type HypervisorSettings, hypervisorOf } from '../domain/hypervisors.ts';
import type { Run } from '../domain/run.ts';
import type { ClusterTarget, DatabaseTarget, Target, VmTarget } from '../domain/target.ts';
import type { ClusterAuth } from '../ports/cluster-auth.ts';
import type { CredentialBroker } from '../ports/credential-broker.ts';
import type { SecretSource } from '../ports/secret-source.ts';
import { hypervisorMaterial } from './hypervisor-material.ts';

/**
 * What a run needs to reach its target, beyond the inventory: SSH keys,
 * kubeconfigs, database logins and the Portainer connection. Values go only
 * into `secretEnv`; everything else here is safe to store.
 */
export interface ConnectionMaterial {
  /** Non-secret play variables (`db_login_host`, `db_login_user` …). */
  readonly vars: Readonly<Record<string, unknown>>;
  /** Env name → secret value. */
  readonly secretEnv: Readonly<Record<string, string>>;
  /** Env name → stored secret name, for values that are a stored secret as is. */
  readonly secretRefs: Readonly<Record<string, string>>;
  /** Secret env that becomes a play variable. */
  readonly secretVars: readonly { readonly var: string; readonly env: string }[];
  /** Secret env the tool receives under its own name. */
  readonly secretEnvNames: readonly string[];
  readonly sshKeyEnv?: string;
  /** Non-secret env for the tool. */
  readonly env: Readonly<Record<string, string>>;
  /** A just-in-time checkout to check in when the run ends. */
  readonly leaseId?: string;
}

export interface ConnectionDeps {
  readonly secrets: SecretSource;
  readonly settings?:
    | (Pick<
        Settings,
        | 'ansible_ssh_key_sm_name'
        | 'gcp_ssh_key_secret_name'
        | 'azure_ssh_key_secret_name'
        | 'ansible_ssh_key_secret'
        | 'portainer_url'
        | 'portainer_api_token_secret'
        | 'password_safe_checkout_minutes'
      > &
        HypervisorSettings)
    | undefined;
  readonly clusterAuth?: ClusterAuth | undefined;
  readonly credentials?: CredentialBroker | undefined;
  /** Each cloud's own secret store, for its VMs' SSH keys; built only when its settings are complete. */
  readonly cloudSecrets?: CloudSecretSources | undefined;
}

export interface CloudSecretSources {
  /** GCP Secret Manager in `gcp_project_id`. */
  readonly gcp?: SecretSource;
  /** Azure Key Vault at `azure_key_vault_url`. */
  readonly azure?: SecretSource;
}

export const SSH_KEY_ENV = 'RW_SSH_KEY';
export const KUBECONFIG_ENV = 'KUBECONFIG';
export const DB_PASSWORD_ENV = 'RW_DB_PASSWORD';
/** A VM run's checked-out managed-account password (becomes `ansible_password`). */
export const VM_PASSWORD_ENV = 'RW_VM_PASSWORD';
export const PORTAINER_TOKEN_ENV = 'PORTAINER_API_TOKEN';

/** Default ports by engine, for `db_login_port` when the registry row has none. */
const ENGINE_PORTS: Record<DatabaseTarget['engine'], number> = {
  postgresql: 5432,
  mysql: 3306,
  mariadb: 3306,
  mssql: 1433,
  oracle: 1521,
  mongodb: 27017,
};

const EMPTY: ConnectionMaterial = {
  vars: {},
  secretEnv: {},
  secretRefs: {},
  secretVars: [],
  secretEnvNames: [],
  env: {},
};

/**
 * Resolve the connection material of one run. `resolveStored: false` leaves
 * stored secrets unread (their references are in `secretRefs`) for backends
 * that fetch them themselves; material minted here — a token-prepared
 * kubeconfig, a checked-out password — is always resolved.
 *
 * Errors are LaunchRejectedError naming the target and the setting or secret
 * to look at, never a value.
 */
export async function connectionMaterial(
  deps: ConnectionDeps,
  run: Pick<Run, 'id' | 'kind' | 'timeoutSeconds' | 'managedAccount'>,
  target: Target | undefined,
  options: { readonly resolveStored?: boolean } = {},
): Promise<ConnectionMaterial> {
  const resolveStored = options.resolveStored !== false;
  if (run.kind === 'portainer') return portainer(deps, resolveStored);
  if (target === undefined) return EMPTY;
  switch (target.kind) {
    case 'vm':
      return vmMaterial(deps, run, target, resolveStored);
    case 'cluster':
      return clusterMaterial(deps, target, resolveStored);
    case 'database':
      return databaseMaterial(deps, run, target);
    default:
      return EMPTY;
  }
}

async function readSecret(secrets: SecretSource, name: string, missing: () => string): Promise<string> {
  try {
    return await secrets.get(name);
  } catch (error) {
    if (error instanceof NotFoundError) throw new LaunchRejectedError(missing());
    // A name the store cannot hold (a Key Vault name with "_", say): its message says what is allowed.
    if (error instanceof ValidationError) throw new LaunchRejectedError(error.message);
    throw error;
  }
}

/**
 * Check a managed account out for the run, for the longer of
 * `password_safe_checkout_minutes` and the run's timeout plus five minutes
 * (for the task to start and the check-in to arrive). `what` names the
 * target in the refusal when Password Safe is not configured.
 */
async function checkOut(
  deps: ConnectionDeps,
  run: Pick<Run, 'id' | 'timeoutSeconds'>,
  account: string,
  what: string,
) {
  if (deps.credentials === undefined) {
    throw new LaunchRejectedError(
      `${what} needs a just-in-time checkout, but Password Safe is not configured: set password_safe_url, password_safe_api_key_secret and password_safe_runas`,
    );
  }
  const minutes = checkoutMinutes(
    deps.settings?.password_safe_checkout_minutes ?? 60,
    run.timeoutSeconds + 300,
  );
  return deps.credentials.checkout({
    account,
    reason: `remote-worker run ${run.id}`,
    durationMinutes: minutes,
  });
}

/**
 * A VM run with a managed account logs in as that account, checked out just
 * in time (`ansible_user` and, from the task's secret env, `ansible_password`).
 * Otherwise cloud VMs over SSH get the private key by secret name:
 * `ansible_ssh_key_sm_name` on AWS (the legacy `ansible_ssh_key_secret` as
 * fallback), `gcp_ssh_key_secret_name` in GCP Secret Manager on GCP,
 * `azure_ssh_key_secret_name` in Azure Key Vault on Azure. On-prem VMs,
 * Azure VMs without that setting, and WinRM bring their own credentials.
 */
async function vmMaterial(
  deps: ConnectionDeps,
  run: Pick<Run, 'id' | 'kind' | 'timeoutSeconds' | 'managedAccount'>,
  target: VmTarget,
  resolveStored: boolean,
): Promise<ConnectionMaterial> {
  const hypervisor = hypervisorOf(target);
  if (hypervisor !== undefined) {
    return { ...EMPTY, ...(await hypervisorMaterial(deps, hypervisor, resolveStored)) };
  }
  const account = managedAccountOf(run, target);
  if (account !== undefined) {
    const lease = await checkOut(deps, run, account, `VM ${target.id} (managed account ${account})`);
    return {
      ...EMPTY,
      vars: { ansible_user: lease.username },
      secretEnv: { [VM_PASSWORD_ENV]: lease.password },
      secretVars: [{ var: 'ansible_password', env: VM_PASSWORD_ENV }],
      leaseId: lease.id,
    };
  }
  if (target.connection !== 'ssh') return EMPTY;
  if (target.cloud === 'aws') return awsSshKey(deps, target, resolveStored);
  if (target.cloud === 'gcp') return gcpSshKey(deps, target, resolveStored);
  if (target.cloud === 'azure') return azureSshKey(deps, target);
  return EMPTY;
}

const sshKey = (name: string, value: string | undefined, ref: boolean): ConnectionMaterial => ({
  ...EMPTY,
  secretEnv: value === undefined ? {} : { [SSH_KEY_ENV]: value },
  secretRefs: ref ? { [SSH_KEY_ENV]: name } : {},
  sshKeyEnv: SSH_KEY_ENV,
});

/** AWS: the deployment's own secret store (Secrets Manager on AWS, secrets.json locally). */
async function awsSshKey(deps: ConnectionDeps, target: VmTarget, resolveStored: boolean) {
  const name = deps.settings?.ansible_ssh_key_sm_name ?? deps.settings?.ansible_ssh_key_secret;
  if (name === undefined) {
    throw new LaunchRejectedError(
      `No SSH key for AWS VM ${target.id}: set ansible_ssh_key_sm_name to the Secrets Manager secret holding the private key`,
    );
  }
  const missing = () =>
    `SSH key secret ${name} for AWS VM ${target.id} could not be read: verify ansible_ssh_key_sm_name is set and the IAM role has secretsmanager:GetSecretValue on that secret`;
  return sshKey(name, resolveStored ? await readSecret(deps.secrets, name, missing) : undefined, true);
}

/**
 * GCP: Secret Manager in `gcp_project_id` (else the deployment's own store,
 * as for AWS VMs). A backend that resolves stored secrets itself (Cloud Run,
 * from Secret Manager) gets the reference only.
 */
async function gcpSshKey(deps: ConnectionDeps, target: VmTarget, resolveStored: boolean) {
  const name = deps.settings?.gcp_ssh_key_secret_name;
  if (name === undefined) {
    throw new LaunchRejectedError(
      `No SSH key for GCP VM ${target.id}: set gcp_ssh_key_secret_name to the Secret Manager secret holding the private key`,
    );
  }
  if (!resolveStored) return sshKey(name, undefined, true);
  // Without gcp_project_id there is no Secret Manager to ask: the deployment's own store holds the key.
  const source = deps.cloudSecrets?.gcp ?? deps.secrets;
  const missing = () =>
    `SSH key secret ${name} for GCP VM ${target.id} could not be read: verify gcp_ssh_key_secret_name is set and the service account has roles/secretmanager.secretAccessor on the secret`;
  return sshKey(name, await readSecret(source, name, missing), true);
}

/**
 * Azure: the Key Vault secret `azure_ssh_key_secret_name` in
 * `azure_key_vault_url` (else the deployment's own store), always read here
 * (no backend reads Key Vault itself). Without the setting the VM brings its
 * own credentials, as before.
 */
async function azureSshKey(deps: ConnectionDeps, target: VmTarget) {
  const name = deps.settings?.azure_ssh_key_secret_name;
  if (name === undefined) return EMPTY;
  // Without azure_key_vault_url the deployment's own store holds the key.
  const source = deps.cloudSecrets?.azure ?? deps.secrets;
  const missing = () =>
    `SSH key secret ${name} for Azure VM ${target.id} could not be read: verify azure_ssh_key_secret_name is set and the identity has the Key Vault Secrets User role (or a get-secret access policy) on the vault`;
  return sshKey(name, await readSecret(source, name, missing), false);
}

/**
 * The stored kubeconfig (secret `credentialsRef`), token-prepared for EKS,
 * AKS and GKE; as stored for on-prem clusters, which keep their own credentials.
 */
async function clusterMaterial(
  deps: ConnectionDeps,
  target: ClusterTarget,
  resolveStored: boolean,
): Promise<ConnectionMaterial> {
  const ref = target.credentialsRef;
  if (ref === undefined) {
    throw new LaunchRejectedError(
      `Cluster ${target.id} has no credentialsRef: register it with the name of the secret holding its kubeconfig`,
    );
  }
  const cloudHosted = target.provider === 'eks' || target.provider === 'aks' || target.provider === 'gke';
  const base = { ...EMPTY, secretEnvNames: [KUBECONFIG_ENV] };
  if (!cloudHosted && !resolveStored) return { ...base, secretRefs: { [KUBECONFIG_ENV]: ref } };
  const stored = await readSecret(
    deps.secrets,
    ref,
    () => `The kubeconfig secret ${ref} of cluster ${target.id} could not be read`,
  );
  if (!cloudHosted)
    return { ...base, secretEnv: { [KUBECONFIG_ENV]: stored }, secretRefs: { [KUBECONFIG_ENV]: ref } };
  if (deps.clusterAuth === undefined) {
    throw new LaunchRejectedError(
      `Cluster ${target.id} (${target.provider}) needs a token-prepared kubeconfig, but this deployment has no cluster authenticator`,
    );
  }
  return { ...base, secretEnv: { [KUBECONFIG_ENV]: await deps.clusterAuth.prepare(target, stored) } };
}

/**
 * `db_login_*` for a database play. A provisioned database's admin login is
 * the stored secret `credentialsRef` (JSON `{ "username", "password" }`); a
 * registered one's managed account is checked out just in time and never
 * stored — the lease id is returned for check-in when the run ends.
 */
async function databaseMaterial(
  deps: ConnectionDeps,
  run: Pick<Run, 'id' | 'timeoutSeconds'>,
  target: DatabaseTarget,
): Promise<ConnectionMaterial> {
  const vars = {
    db_engine: target.engine,
    db_login_host: target.endpoint.host,
    db_login_port: target.endpoint.port ?? ENGINE_PORTS[target.engine],
  };
  const login = (user: string, password: string, leaseId?: string): ConnectionMaterial => ({
    ...EMPTY,
    vars: { ...vars, db_login_user: user },
    secretEnv: { [DB_PASSWORD_ENV]: password },
    secretVars: [{ var: 'db_login_password', env: DB_PASSWORD_ENV }],
    ...(leaseId === undefined ? {} : { leaseId }),
  });

  if (target.source === 'registered') {
    if (target.managedAccount === undefined) {
      throw new LaunchRejectedError(
        `Registered database ${target.id} has no managed account: register it against a Password Safe managed account`,
      );
    }
    const lease = await checkOut(deps, run, target.managedAccount, `Registered database ${target.id}`);
    return login(lease.username, lease.password, lease.id);
  }

  const ref = target.credentialsRef;
  if (ref === undefined) {
    throw new LaunchRejectedError(
      `Provisioned database ${target.id} has no credentialsRef: the secret holding its admin login is unknown`,
    );
  }
  const stored = await readSecret(
    deps.secrets,
    ref,
    () => `The admin login secret ${ref} of database ${target.id} could not be read`,
  );
  const parsed = parseLogin(stored);
  if (parsed === undefined) {
    throw new LaunchRejectedError(
      `The admin login secret ${ref} of database ${target.id} is not JSON with "username" and "password"`,
    );
  }
  return login(parsed.username, parsed.password);
}

function parseLogin(text: string): { username: string; password: string } | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return undefined;
    const { username, password } = value as Record<string, unknown>;
    return typeof username === 'string' && typeof password === 'string' && username !== '' && password !== ''
      ? { username, password }
      : undefined;
  } catch {
    return undefined;
  }
}

/** The one configured Portainer connection, as `PORTAINER_URL` and `PORTAINER_API_TOKEN`. */
async function portainer(deps: ConnectionDeps, resolveStored: boolean): Promise<ConnectionMaterial> {
  const url = deps.settings?.portainer_url;
  const ref = deps.settings?.portainer_api_token_secret;
  if (url === undefined || ref === undefined) {
    throw new LaunchRejectedError(
      'Portainer is not configured: set portainer_url and portainer_api_token_secret (the name of the secret holding the API token)',
    );
  }
  const secretEnv = resolveStored
    ? {
        [PORTAINER_TOKEN_ENV]: await readSecret(
          deps.secrets,
          ref,
          () => `The Portainer API token secret ${ref} could not be read`,
        ),
      }
    : {};
  return {
    ...EMPTY,
    env: { PORTAINER_URL: url },
    secretEnv,
    secretRefs: { [PORTAINER_TOKEN_ENV]: ref },
    secretEnvNames: [PORTAINER_TOKEN_ENV],
  };
}
