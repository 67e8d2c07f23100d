import type { K8sOperation } from '../../shared/domain/run.ts';
import type { AssetType } from '../../shared/domain/task-spec.ts';
import { ShimError } from './errors.ts';

export interface ToolCommand {
  readonly tool: 'ansible-playbook' | 'kubectl' | 'helm';
  readonly args: readonly string[];
}

/** Names, releases and charts come from a request: one starting with `-` would be read as a flag. */
function positional(value: string, what: string): string {
  if (value === '' || value.startsWith('-'))
    throw new ShimError(`${what} must not be empty or start with "-"`);
  return value;
}

/**
 * Prints the secret's name, type and key names — never its values: run output
 * is stored and shown, and a caller that needs a value should bind it as a
 * secret instead.
 */
const SECRET_SUMMARY_TEMPLATE =
  'go-template=secret {{.metadata.name}} type={{.type}}{{"\\n"}}{{range $k, $v := .data}}key {{$k}}{{"\\n"}}{{end}}';

/**
 * kubectl / helm argv for a k8s operation; no shell is involved.
 * `apply`/`delete` take the asset as a manifest; `helm_upgrade` takes it as a
 * values file when given one.
 */
export function k8sCommand(op: K8sOperation, assetPath: string | undefined): ToolCommand {
  const ns = (namespace: string | undefined): string[] =>
    namespace === undefined ? [] : ['--namespace', positional(namespace, 'namespace')];
  const manifest = (): string => {
    if (assetPath === undefined) throw new ShimError(`${op.action} needs a manifest asset`);
    return assetPath;
  };
  switch (op.action) {
    case 'apply':
      return { tool: 'kubectl', args: ['apply', '-f', manifest(), ...ns(op.namespace)] };
    case 'delete':
      return { tool: 'kubectl', args: ['delete', '-f', manifest(), ...ns(op.namespace)] };
    case 'get_secret':
      return {
        tool: 'kubectl',
        args: [
          'get',
          'secret',
          positional(op.name, 'name'),
          ...ns(op.namespace),
          '-o',
          SECRET_SUMMARY_TEMPLATE,
        ],
      };
    case 'helm_repo_add':
      // --force-update: re-running the same operation must not fail because the repo exists.
      return {
        tool: 'helm',
        args: [
          'repo',
          'add',
          '--force-update',
          positional(op.repoName, 'repoName'),
          positional(op.repoUrl, 'repoUrl'),
        ],
      };
    case 'helm_upgrade':
      return {
        tool: 'helm',
        args: [
          'upgrade',
          '--install',
          positional(op.release, 'release'),
          positional(op.chart, 'chart'),
          ...(op.namespace === undefined ? [] : [...ns(op.namespace), '--create-namespace']),
          ...(op.version === undefined ? [] : ['--version', positional(op.version, 'version')]),
          ...(assetPath === undefined ? [] : ['--values', assetPath]),
        ],
      };
  }
}

/** Whether the operation reads the asset at all (repo add and get secret don't). */
export function k8sNeedsAsset(op: K8sOperation, assetType: AssetType): boolean {
  return (
    op.action === 'apply' ||
    op.action === 'delete' ||
    (op.action === 'helm_upgrade' && assetType === 'playbook')
  );
}
