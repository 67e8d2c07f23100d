import { ValidationError } from './errors.ts';
import type { RunKind } from './run.ts';
import { type Target, untargetableReason, type VmTarget } from './target.ts';
import type { AnsibleInventory } from './task.ts';

/**
 * Ansible inventories: the one-host inventory a run's task gets, and the
 * dynamic JSON inventory `GET /inventory` serves from the target registry.
 *
 * Connection defaults, chosen so a bare registry row works and stays safe:
 * - SSH: port 22.
 * - WinRM: port 5986 (HTTPS) and `ntlm` transport, which works for local and
 *   domain accounts without Kerberos set-up on the runner. Certificate
 *   validation is left at Ansible's default (`validate`); an operator with
 *   self-signed listeners sets `ansible_winrm_server_cert_validation: ignore`
 *   knowingly (as an extra var or in a playbook). A registry port of 5985 makes
 *   Ansible use plain HTTP, its rule for that port.
 * - `local`: the play runs on the runner itself, with the interpreter that
 *   runs ansible-playbook (discovery could pick a Python without Ansible's
 *   dependencies).
 */

/** Host variables that make a play run on the runner itself. */
export const LOCALHOST_VARS = {
  ansible_connection: 'local',
  ansible_python_interpreter: '{{ ansible_playbook_python }}',
} as const;

export const DEFAULT_SSH_PORT = 22;
export const DEFAULT_WINRM_PORT = 5986;

export interface InventoryOptions {
  /** The run's SSH user; wins over the target's. */
  readonly sshUser?: string;
}

/**
 * The inventory for one run. VM runs get one host, named by the target id;
 * every other kind is a `localhost` play (cluster and database plays reach
 * out through a kubeconfig or `db_login_*` vars; k8s ops and Portainer plays
 * have no host at all).
 *
 * @throws ValidationError when a VM run has no VM target that can be reached.
 */
export function inventoryForRun(
  kind: RunKind,
  target: Target | undefined,
  opts: InventoryOptions = {},
): AnsibleInventory {
  if (kind !== 'vm') {
    return { all: { hosts: { localhost: { ...LOCALHOST_VARS } } } };
  }
  if (target === undefined) throw new ValidationError('A VM run needs a target');
  if (target.kind !== 'vm') {
    throw new ValidationError(`A VM run needs a VM target; ${target.id} is a ${target.kind}`);
  }
  const reason = untargetableReason(target);
  if (reason !== undefined) throw new ValidationError(`${target.id} cannot be a target: ${reason}`);
  return { all: { hosts: { [target.id]: vmHostVars(target, opts.sshUser ?? target.sshUser) } } };
}

/** A VM's connection variables (`ansible_host`, `ansible_connection`, port, user). */
export function vmHostVars(target: VmTarget, user: string | undefined): Record<string, unknown> {
  const vars: Record<string, unknown> = { ansible_host: target.address };
  switch (target.connection) {
    case 'ssh':
      vars.ansible_connection = 'ssh';
      vars.ansible_port = target.port ?? DEFAULT_SSH_PORT;
      break;
    case 'winrm':
      vars.ansible_connection = 'winrm';
      vars.ansible_port = target.port ?? DEFAULT_WINRM_PORT;
      vars.ansible_winrm_transport = 'ntlm';
      break;
    case 'local':
      Object.assign(vars, LOCALHOST_VARS);
      break;
  }
  if (user !== undefined) vars.ansible_user = user;
  return vars;
}

/** Ansible's dynamic inventory script format (`--list`). */
export interface DynamicInventory {
  readonly _meta: { readonly hostvars: Readonly<Record<string, Readonly<Record<string, unknown>>>> };
  readonly all: { readonly children: readonly string[] };
  readonly [group: string]:
    | { readonly hosts?: readonly string[]; readonly children?: readonly string[] }
    | DynamicInventory['_meta'];
}

/**
 * The registry as an Ansible dynamic JSON inventory. Groups: `cloud_<cloud>`,
 * `kind_<kind>` and `hypervisor_<group>` (prefixed so a hypervisor group
 * named `aws` never merges with a cloud). Rows that can never be a target are
 * left out, by the same rule the run endpoints enforce. Group names keep only
 * letters, digits and `_`, the characters Ansible accepts without warning.
 *
 * Host variables carry the connection settings (as for a run, without a run's
 * SSH user) and `rw_kind` / `rw_cloud` / `rw_name`; cluster and database rows
 * are `localhost`-style hosts with their endpoint described in `rw_*` vars.
 */
export function registryInventory(targets: readonly Target[]): DynamicInventory {
  const hostvars: Record<string, Record<string, unknown>> = {};
  const groups = new Map<string, string[]>();
  const addTo = (group: string, host: string): void => {
    const hosts = groups.get(group);
    if (hosts === undefined) groups.set(group, [host]);
    else hosts.push(host);
  };

  const sorted = [...targets].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const target of sorted) {
    if (untargetableReason(target) !== undefined) continue;
    const common = { rw_kind: target.kind, rw_cloud: target.cloud, rw_name: target.name };
    const localhost = { ...LOCALHOST_VARS, ...common };
    switch (target.kind) {
      case 'vm':
        hostvars[target.id] = presentVars({
          ...vmHostVars(target, target.sshUser),
          ...common,
          rw_os: target.os,
        });
        if (target.hypervisorGroup !== undefined) {
          addTo(`hypervisor_${groupName(target.hypervisorGroup)}`, target.id);
        }
        break;
      case 'cluster':
        hostvars[target.id] = presentVars({
          ...localhost,
          rw_provider: target.provider,
          rw_region: target.region,
          rw_cluster_name: target.clusterName,
        });
        break;
      case 'database':
        hostvars[target.id] = presentVars({
          ...localhost,
          rw_engine: target.engine,
          rw_db_host: target.endpoint.host,
          rw_db_port: target.endpoint.port,
        });
        break;
      case 'virtual_desktop':
        continue;
    }
    addTo(`cloud_${groupName(target.cloud)}`, target.id);
    addTo(`kind_${groupName(target.kind)}`, target.id);
  }

  const names = [...groups.keys()].sort();
  const inventory: Record<string, unknown> = {
    _meta: { hostvars },
    all: { children: names },
  };
  for (const name of names) inventory[name] = { hosts: groups.get(name) ?? [] };
  return inventory as unknown as DynamicInventory;
}

/** Host vars without the ones a target leaves unset: an absent field is no variable rather than a null. */
function presentVars(vars: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(vars).filter(([, value]) => value !== undefined));
}

function groupName(raw: string): string {
  return raw.replace(/[^A-Za-z0-9_]/g, '_');
}
