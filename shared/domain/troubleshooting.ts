import type { Hypervisor } from './hypervisors.ts';
import type { RunKind, Runner } from './run.ts';
import type { Cloud } from './target.ts';

/**
 * The seeds' troubleshooting entries as run reasons: when a task's output
 * shows a cause the reference documents name, the run's reason says it in
 * their words, with their fix. Detection reads one output line at a time
 * (what the relay's log shipper sees); the message depends on where the run
 * went (the per-cloud secret for an SSH key, the hypervisor for a password).
 */
export const TROUBLES = [
  'docker_missing',
  'pywinrm_missing',
  'winrm_refused',
  'ssh_auth_failed',
  'k8s_api_timeout',
] as const;
export type Trouble = (typeof TROUBLES)[number];

/** Where the run went, as far as its message depends on it. */
export interface TroubleContext {
  readonly kind: RunKind;
  readonly runner?: Runner | undefined;
  readonly cloud?: Cloud | undefined;
  readonly hypervisor?: Hypervisor | undefined;
}

/**
 * Patterns, each from the tool's own words:
 * - bash's `docker: command not found`, dash's `docker: not found`, Node's
 *   `spawn docker ENOENT`, and the docker executor's own refusal;
 * - Ansible's winrm connection plugin: `winrm or requests is not installed: No module named 'winrm'`,
 *   and the task shim's preflight: `pywinrm is not installed for /usr/bin/python3 …`;
 * - pywinrm through urllib3 against a closed port: `…/wsman (Caused by NewConnectionError(…: [Errno 111] Connection refused'))`;
 * - OpenSSH: `Permission denied (publickey…)`, `Permission denied, please try again`;
 *   paramiko: `Authentication failed`; sshpass: `Invalid/incorrect password`;
 * - kubectl: `Unable to connect to the server: dial tcp …: i/o timeout` (or a
 *   context deadline, a TLS handshake timeout); the Kubernetes Python client
 *   under kubernetes.core: `ConnectTimeoutError(… (connect timeout=…)`.
 */
const PATTERNS: readonly (readonly [Trouble, RegExp])[] = [
  [
    'docker_missing',
    /\bdocker: (?:command )?not found\b|spawn \S*docker ENOENT|the docker CLI \(\S+\) is not installed/,
  ],
  [
    'pywinrm_missing',
    /winrm or requests is not installed|No module named ['"]?winrm['"]?|pywinrm is not installed/,
  ],
  ['winrm_refused', /\/wsman\b.*(?:Connection refused|Errno 111)|\bwinrm\b.*\bconnection refused/i],
  [
    'ssh_auth_failed',
    /Permission denied \((?:publickey|password|keyboard-interactive)|Permission denied, please try again|Failed to authenticate|Authentication failed\.|Invalid\/incorrect password/,
  ],
  [
    'k8s_api_timeout',
    /Unable to connect to the server: .*(?:i\/o timeout|context deadline exceeded|TLS handshake timeout)|ConnectTimeoutError\(.*connect timeout=/,
  ],
];

/** Plays that reach a cluster API; a timeout elsewhere is not the API's. */
const CLUSTER_KINDS: ReadonlySet<RunKind> = new Set(['k8s_op', 'cluster_play']);

/** The trouble one output line shows, if any. */
export function detectTrouble(line: string, kind: RunKind): Trouble | undefined {
  for (const [trouble, pattern] of PATTERNS) {
    if (!pattern.test(line)) continue;
    if (trouble === 'k8s_api_timeout' && !CLUSTER_KINDS.has(kind)) continue;
    return trouble;
  }
  return undefined;
}

/** Reads output line by line and keeps the first trouble seen: the cause, not its echoes. */
export class TroubleDetector {
  #found: Trouble | undefined;

  constructor(private readonly kind: RunKind) {}

  feed(line: string): void {
    this.#found ??= detectTrouble(line, this.kind);
  }

  get found(): Trouble | undefined {
    return this.#found;
  }
}

const SSH_HINTS = {
  aws: 'verify ansible_ssh_key_sm_name is set and the IAM role has secretsmanager:GetSecretValue on that secret',
  gcp: "verify gcp_ssh_key_secret_name is set and the service account has roles/secretmanager.secretAccessor on the secret. Ensure the public key is in the instance's ~/.ssh/authorized_keys (injected at launch)",
  azure:
    "verify azure_ssh_key_secret_name and azure_key_vault_url are set and the identity has Key Vault Secrets User on the vault. Ensure the public key is in the VM's ~/.ssh/authorized_keys",
} as const;

function sshMessage(context: TroubleContext): string {
  const h = context.hypervisor;
  if (h === 'proxmox') {
    return 'SSH authentication failed (Proxmox) — the stored password must work for SSH (not just the management API): proxmox_password_secret must be set (API-token-only auth is not sufficient for SSH)';
  }
  if (h === 'vsphere') {
    return 'SSH authentication failed (vSphere) — the stored password must work for SSH (not just the management API), and SSH must be enabled on the ESXi host (Host → Manage → Services → TSM-SSH → Start, or vim-cmd hostsvc/enable_ssh)';
  }
  if (h !== undefined) {
    return `SSH authentication failed (${h}) — the stored password (${h}_password_secret) must work for SSH, not just the management API`;
  }
  if (context.cloud === 'aws') return `SSH authentication failed on cloud target (AWS) — ${SSH_HINTS.aws}`;
  if (context.cloud === 'gcp') return `SSH authentication failed on cloud target (GCP) — ${SSH_HINTS.gcp}`;
  if (context.cloud === 'azure')
    return `SSH authentication failed on cloud target (Azure) — ${SSH_HINTS.azure}`;
  return "SSH authentication failed — the host refused the run's SSH user and key: check the target's sshUser and that the key or password the runner uses is authorised on the host";
}

/** The seeds' message for a trouble, with its fix, for this run. */
export function troubleMessage(trouble: Trouble, context: TroubleContext): string {
  switch (trouble) {
    case 'docker_missing':
      return '"docker: command not found" — the Docker socket is not mounted or no docker CLI is installed where the relay runs: verify docker-compose.yml includes the /var/run/docker.sock bind mount and restart the stack (or set local_docker_cli, or local_executor: process)';
    case 'pywinrm_missing':
      return '"pywinrm is not installed" — the runner lacks pywinrm (e.g. upstream willhallonline/ansible as ansible_local_image): clear the image override or point it at an image that has pywinrm; the default chrweav/ansible-winrm:latest includes it. On the process executor, install pywinrm for the Python that runs ansible-playbook (Debian: python3-winrm)';
    case 'winrm_refused':
      return `"WinRM connection refused" — WinRM is not enabled or not reachable${context.hypervisor === 'hyperv' ? ' on the Hyper-V host' : ''}: run Enable-PSRemoting -Force on the host and open ports 5985/5986 to the runner`;
    case 'ssh_auth_failed':
      return sshMessage(context);
    case 'k8s_api_timeout': {
      const cloud = context.runner !== undefined && context.runner !== 'local';
      return `${cloud ? 'Cloud k8s task' : 'The k8s task'} timed out reaching the API — the cluster API isn't reachable from the runner's network: confirm the cluster has a public endpoint and add the runner's egress IP/CIDR to the cluster's authorized-networks allow-list`;
    }
  }
}
