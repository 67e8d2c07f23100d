import type { TokenCredential } from '@azure/identity';

/**
 * AKS bearer tokens: an Entra ID access token for the AKS server
 * application, which is what `kubelogin get-token` hands kubectl. The
 * application id is the same in every AKS cluster with AKS-managed Entra
 * integration (and in every Azure cloud); the legacy per-cluster server
 * applications (retired with Azure AD integration v1) are not supported, so a
 * kubeconfig's `--server-id` / `apiserver-id` is not read.
 */

/** The AKS server application ("Azure Kubernetes Service AAD Server"), as a `.default` scope. */
export const AKS_SCOPE = '6dae42f8-4368-4678-94ff-3960e28e3630/.default';

let sharedCredential: Promise<TokenCredential> | undefined;

/**
 * `DefaultAzureCredential` (environment, workload identity, managed
 * identity, Azure CLI …), made once per process on first use so deployments
 * that never see an AKS cluster never load `@azure/identity`.
 *
 * @example
 * const credential = await defaultAzureCredential();
 */
export function defaultAzureCredential(): Promise<TokenCredential> {
  sharedCredential ??= import('@azure/identity').then(
    ({ DefaultAzureCredential }) => new DefaultAzureCredential(),
  );
  return sharedCredential;
}

/**
 * Ask `credential` for a token for the AKS server application; `undefined`
 * when the credential answers without one.
 *
 * @example
 * const token = await aksToken(new ManagedIdentityCredential(), AbortSignal.timeout(30_000));
 */
export async function aksToken(
  credential: TokenCredential,
  abortSignal: AbortSignal,
): Promise<string | undefined> {
  const answer = await credential.getToken(AKS_SCOPE, { abortSignal });
  return answer?.token || undefined;
}
