/**
 * GKE bearer tokens: a Google OAuth access token for the caller's identity,
 * with the scopes `gke-gcloud-auth-plugin` asks for. GKE accepts any token of
 * an identity that IAM (or RBAC) lets into the cluster.
 */

/** The scopes `gke-gcloud-auth-plugin` requests. */
export const GKE_SCOPES: readonly string[] = [
  'https://www.googleapis.com/auth/cloud-platform',
  'https://www.googleapis.com/auth/userinfo.email',
];

/**
 * Source of Google access tokens for the given scopes. Resolves to the token,
 * or to null / undefined when the client has none to give.
 */
export type GoogleAccessTokenProvider = (scopes: readonly string[]) => Promise<string | null | undefined>;

const clients = new Map<string, Promise<{ getAccessToken(): Promise<string | null | undefined> }>>();

/**
 * Application Default Credentials through `google-auth-library`
 * (`GOOGLE_APPLICATION_CREDENTIALS`, workload identity federation, the
 * metadata server …). One `GoogleAuth` per scope set and process, loaded on
 * first use; it caches and refreshes the token itself.
 *
 * @example
 * const token = await defaultGoogleAccessToken(GKE_SCOPES);
 */
export const defaultGoogleAccessToken: GoogleAccessTokenProvider = async (scopes) => {
  const key = [...scopes].sort().join(' ');
  let client = clients.get(key);
  if (client === undefined) {
    client = import('google-auth-library').then(({ GoogleAuth }) => new GoogleAuth({ scopes: [...scopes] }));
    clients.set(key, client);
  }
  return (await client).getAccessToken();
};
