import type { ClusterTarget } from '../domain/target.ts';

/**
 * Turns a cluster's stored kubeconfig into one a runner can use without cloud
 * tooling: every user's `exec` block (aws eks get-token, kubelogin,
 * gke-gcloud-auth-plugin) is replaced by a short-lived bearer token minted
 * here, server-side. Kubeconfigs of on-prem clusters (`kubeconfig`, `k3s`,
 * `other`) keep their own credentials and come back unchanged.
 *
 * @example
 * const kubeconfig = await clusterAuth.prepare(target, storedKubeconfigYaml);
 */
export interface ClusterAuth {
  /** The prepared kubeconfig (YAML). Errors name the cluster and the provider, never a token. */
  prepare(target: ClusterTarget, storedKubeconfig: string): Promise<string>;
}
