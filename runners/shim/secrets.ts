import { kubeconfigSecrets, plaintextPasswords } from '../../shared/domain/redaction.ts';
import type { TaskSpec } from '../../shared/domain/task-spec.ts';
import { redactEnvNames } from './env.ts';
import { ShimError } from './errors.ts';

/** Play variables holding secrets, marked `__ansible_unsafe` so Ansible never templates a value. */
export function secretPlayVars(spec: TaskSpec, env: NodeJS.ProcessEnv, only?: (name: string) => boolean) {
  const vars: Record<string, unknown> = {};
  for (const { var: name, env: from } of spec.secretVars) {
    if (only !== undefined && !only(name)) continue;
    const value = env[from];
    if (value === undefined)
      throw new ShimError(`secret variable ${name}: environment variable ${from} is not set`);
    vars[name] = { __ansible_unsafe: value };
  }
  return vars;
}

/**
 * Every secret value this task holds, for the redactor: bound secret vars,
 * secret env, the SSH key, kubeconfig content and the credentials inside it,
 * plaintext password extra vars, and `RW_REDACT_ENV`. Missing variables are
 * skipped here (so the redactor covers whatever is present) and refused by
 * {@link requireSecretEnv} and {@link secretPlayVars}.
 */
export function secretValues(spec: TaskSpec, env: NodeJS.ProcessEnv): string[] {
  const fromEnv = (names: readonly string[]): string[] =>
    names.map((name) => env[name]).filter((v): v is string => v !== undefined);
  const kubeconfigs = fromEnv(['KUBECONFIG', 'K8S_AUTH_KUBECONFIG']).filter((v) => v.includes('\n'));
  return [
    ...fromEnv(spec.secretVars.map((s) => s.env)),
    ...fromEnv(spec.secretEnvNames ?? []),
    ...fromEnv(spec.sshKeyEnv === undefined ? [] : [spec.sshKeyEnv]),
    ...kubeconfigs,
    ...kubeconfigs.flatMap(kubeconfigSecrets),
    // A read URL's query is its capability (presigned GET, SAS, V4 signature).
    ...assetUrlCapability(spec),
    // A WinRM password forwarded as a plain extra var (local runner only) is still a secret.
    ...plaintextPasswords(spec.extraVars),
    ...fromEnv(redactEnvNames(env)),
  ];
}

/** The signed query of a `url` asset, and the signature alone, for the redactor. */
function assetUrlCapability(spec: TaskSpec): string[] {
  if (spec.asset.kind !== 'url') return [];
  try {
    const url = new URL(spec.asset.url);
    const signatures = ['X-Amz-Signature', 'X-Goog-Signature', 'sig']
      .map((name) => url.searchParams.get(name))
      .filter((v): v is string => v !== null);
    return url.search.length > 1 ? [url.search.slice(1), ...signatures] : signatures;
  } catch {
    return [];
  }
}

/** The secret env the spec promises must be there: a tool run without its credentials fails in confusing ways. */
export function requireSecretEnv(spec: TaskSpec, env: NodeJS.ProcessEnv): void {
  const missing = (spec.secretEnvNames ?? []).filter((name) => env[name] === undefined);
  if (missing.length > 0) throw new ShimError(`secret environment ${missing.join(', ')} is not set`);
  if (spec.sshKeyEnv !== undefined && (env[spec.sshKeyEnv] ?? '').trim() === '') {
    throw new ShimError(`the SSH key variable ${spec.sshKeyEnv} is not set`);
  }
}

/** The key as OpenSSH reads it: LF line ends and a final newline (without one it reports "invalid format"). */
export function sshKeyFileText(key: string): string {
  const lf = key.replace(/\r\n?/g, '\n');
  return lf.endsWith('\n') ? lf : `${lf}\n`;
}

/**
 * Wrappers get no extra vars and only the secret vars Ansible itself reads
 * (`ansible_password`, `ansible_become_password`, …): a wrapper references no
 * variable, but a `.ps1` over WinRM cannot even connect without its password.
 */
export const isConnectionVar = (name: string): boolean => name.startsWith('ansible_');
