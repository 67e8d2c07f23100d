import type { K8sOperation, RunKind } from './run.ts';

/**
 * What the task shim needs to run one run, with no secret value in it: it is
 * safe to put on a command line, a container override or a queue message.
 * Secret values travel separately, as environment variables named in
 * `secretVars`, and the shim turns them into play variables.
 */
export type AssetType = 'playbook' | 'script' | 'powershell' | 'rpm' | 'deb';

export interface AnsibleInventory {
  readonly all: {
    readonly hosts: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
    readonly vars?: Readonly<Record<string, unknown>>;
  };
}

export interface TaskSpec {
  readonly runId: string;
  readonly kind: RunKind;
  /** Where the shim finds the asset: a path it can read, or a URL it downloads. */
  readonly asset:
    | { readonly kind: 'file'; readonly path: string }
    | { readonly kind: 'url'; readonly url: string };
  readonly assetType: AssetType;
  readonly inventory: AnsibleInventory;
  /** Forwarded to playbooks only; scripts and packages ignore them. */
  readonly extraVars: Readonly<Record<string, unknown>>;
  /** `{ var: 'db_password', env: 'RW_SECRET_0' }`: the value of env RW_SECRET_0 becomes play var db_password. */
  readonly secretVars: readonly { readonly var: string; readonly env: string }[];
  /**
   * Secret environment the tool receives under these very names (`KUBECONFIG`
   * with the token-prepared kubeconfig, `PORTAINER_API_TOKEN`); redacted from
   * output like `secretVars`. Values arrive like every other secret env.
   */
  readonly secretEnvNames?: readonly string[];
  /** The env holding an SSH private key: the shim writes it to a 0600 file and sets `ansible_ssh_private_key_file`. */
  readonly sshKeyEnv?: string;
  /** Non-secret environment for the tool (`PORTAINER_URL`). */
  readonly env?: Readonly<Record<string, string>>;
  /** k8s_op runs: the kubectl/helm action. */
  readonly operation?: K8sOperation;
  readonly timeoutSeconds: number;
}

/** Asset type from its file name; undefined for an extension no wrapper exists for. */
export function assetTypeOf(path: string): AssetType | undefined {
  const lower = path.toLowerCase();
  if (lower.endsWith('.yml') || lower.endsWith('.yaml')) return 'playbook';
  if (lower.endsWith('.sh')) return 'script';
  if (lower.endsWith('.ps1')) return 'powershell';
  if (lower.endsWith('.rpm')) return 'rpm';
  if (lower.endsWith('.deb')) return 'deb';
  return undefined;
}
