import type { TokenCredential } from '@azure/identity';
import { type DomainError, LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import type { ClusterTarget } from '../../domain/target.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import type { ClusterAuth } from '../../ports/cluster-auth.ts';
import { aksToken, defaultAzureCredential } from './aks-token.ts';
import { type AwsCredentialsProvider, eksToken, eksTokenRequest } from './eks-token.ts';
import { defaultGoogleAccessToken, GKE_SCOPES, type GoogleAccessTokenProvider } from './gke-token.ts';
import {
  execPlugin,
  hasOwnCredentials,
  hasPluginAuth,
  type KubeconfigUser,
  readKubeconfig,
  tokenPrepared,
} from './kubeconfig.ts';

type Provider = ClusterTarget['provider'];
type CloudProvider = Extract<Provider, 'eks' | 'aks' | 'gke'>;

const PROVIDER_LABEL = {
  eks: 'EKS',
  aks: 'AKS',
  gke: 'GKE',
  kubeconfig: 'kubeconfig',
  k3s: 'k3s',
  other: 'other',
} as const satisfies Record<Provider, string>;

const isCloud = (provider: Provider): provider is CloudProvider =>
  provider === 'eks' || provider === 'aks' || provider === 'gke';

const DEFAULT_TIMEOUT_MS = 30_000;

let sharedAwsCredentials: Promise<AwsCredentialsProvider> | undefined;
/** The AWS SDK's default chain, made once per process on first use; it caches and refreshes credentials. */
const defaultAwsCredentials = (): Promise<AwsCredentialsProvider> => {
  sharedAwsCredentials ??= import('@aws-sdk/credential-provider-node').then(({ defaultProvider }) =>
    defaultProvider(),
  );
  return sharedAwsCredentials;
};

export interface CloudClusterAuthOptions {
  /** AWS credentials that sign EKS tokens. Default: the SDK's default chain (env, SSO, web identity, ECS/EC2 roles). */
  readonly awsCredentials?: AwsCredentialsProvider;
  /** Entra ID credential for AKS tokens. Default: `DefaultAzureCredential`. */
  readonly azureCredential?: TokenCredential;
  /** Google access tokens for GKE. Default: Application Default Credentials via `google-auth-library`. */
  readonly googleAccessToken?: GoogleAccessTokenProvider;
  /** Signing time of EKS tokens. */
  readonly clock?: Clock;
  /** Longest wait for one credential or token (default 30 s); past it the launch is retried later. */
  readonly timeoutMs?: number;
}

/**
 * ClusterAuth that mints the bearer token each cloud's kubectl plugin would
 * have fetched, here on the server, so runners need no cloud tooling or
 * cloud credentials:
 *
 * - `eks`: a presigned STS GetCallerIdentity token bound to the cluster
 *   (as `aws eks get-token`), signed with the control plane's AWS identity.
 * - `aks`: an Entra ID token for the AKS server application (as `kubelogin`).
 * - `gke`: a Google OAuth access token (as `gke-gcloud-auth-plugin`).
 * - `kubeconfig`, `k3s`, `other`: checked, then returned unchanged — on-prem
 *   clusters keep their own credentials, and an `exec` block stays, since the
 *   relay that runs them has the tools it names.
 *
 * Only the user of the current context gets a token (minting one for other
 * clusters would widen what a run can reach); other users lose their `exec`
 * and `auth-provider` blocks and so have no credentials on the runner. A
 * current user with credentials of its own and no plugin (an AKS local
 * account's client certificate, a service-account token) is kept as it is;
 * one with no credentials at all gets a token.
 *
 * Tokens are short-lived — about 15 minutes for EKS, an hour or so for Entra
 * ID and Google — so prepare just before launch; a run that outlives its
 * token gets 401s from the cluster. Assuming an IAM role named in the EKS
 * exec block (`--role-arn`) and an AWS profile in it (`AWS_PROFILE`) are not
 * supported: the token is signed with the control plane's own identity, and
 * a role in the kubeconfig is refused rather than silently ignored.
 *
 * Errors name the cluster, the provider and the step. Configuration problems
 * (bad kubeconfig, no region, credentials not set up) are
 * LaunchRejectedError; a credential service that failed or did not answer in
 * time is LauncherUnavailableError, so the launch is tried again. Neither
 * quotes the kubeconfig or a token.
 *
 * @example
 * const clusterAuth = new CloudClusterAuth(); // default credential chains, loaded on first use
 * const kubeconfig = await clusterAuth.prepare(target, await secrets.get(target.credentialsRef));
 */
export class CloudClusterAuth implements ClusterAuth {
  readonly #options: CloudClusterAuthOptions;
  readonly #clock: Clock;
  readonly #timeoutMs: number;

  constructor(options: CloudClusterAuthOptions = {}) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  async prepare(target: ClusterTarget, storedKubeconfig: string): Promise<string> {
    const cluster = describeCluster(target);
    const config = readKubeconfig(storedKubeconfig, `The stored kubeconfig of ${cluster}`);
    const provider = target.provider;
    if (!isCloud(provider)) return storedKubeconfig;

    const current = config.currentUser;
    if (current === undefined) {
      throw new LaunchRejectedError(
        `The stored kubeconfig of ${cluster} has a current context that names no user to carry a token`,
      );
    }
    const tokens = new Map<string, string>();
    if (hasPluginAuth(current.user) || !hasOwnCredentials(current.user)) {
      tokens.set(current.name, await this.#mint(provider, target, current, cluster));
    }
    return tokenPrepared(config, tokens) ?? storedKubeconfig;
  }

  #mint(
    provider: CloudProvider,
    target: ClusterTarget,
    user: KubeconfigUser,
    cluster: string,
  ): Promise<string> {
    switch (provider) {
      case 'eks':
        return this.#eks(target, user, cluster);
      case 'aks':
        return this.#aks(cluster);
      case 'gke':
        return this.#gke(cluster);
    }
  }

  async #eks(target: ClusterTarget, user: KubeconfigUser, cluster: string): Promise<string> {
    const request = eksTokenRequest(target, execPlugin(user.user));
    if (typeof request === 'string') {
      throw new LaunchRejectedError(`Could not sign a token for ${cluster}: ${request}`);
    }
    const step = `Could not obtain AWS credentials to sign a token for ${cluster}`;
    const credentials = await this.#step(step, async () => {
      const provider = this.#options.awsCredentials ?? (await defaultAwsCredentials());
      return provider();
    });
    if (!credentials?.accessKeyId || !credentials.secretAccessKey) {
      throw new LaunchRejectedError(`${step}: the credential provider returned no access key`);
    }
    return this.#step(`Could not sign a token for ${cluster}`, () =>
      eksToken(request, credentials, new Date(this.#clock.nowMs())),
    );
  }

  async #aks(cluster: string): Promise<string> {
    const step = `Could not obtain an Entra ID token for ${cluster}`;
    const token = await this.#step(step, async (signal) =>
      aksToken(this.#options.azureCredential ?? (await defaultAzureCredential()), signal),
    );
    if (token === undefined) throw new LaunchRejectedError(`${step}: the credential returned no token`);
    return token;
  }

  async #gke(cluster: string): Promise<string> {
    const step = `Could not obtain a Google access token for ${cluster}`;
    const token = await this.#step(step, () =>
      (this.#options.googleAccessToken ?? defaultGoogleAccessToken)(GKE_SCOPES),
    );
    if (typeof token !== 'string' || token === '') {
      throw new LaunchRejectedError(`${step}: the credentials returned no token`);
    }
    return token;
  }

  /** Run one credential step within the time limit, turning its failure into a domain error that names the step. */
  async #step<T>(step: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(new StepTimeoutError(`no answer within ${Math.round(this.#timeoutMs / 1000)} s`));
      }, this.#timeoutMs);
    });
    try {
      return await Promise.race([work(controller.signal), timedOut]);
    } catch (error) {
      throw stepError(step, error);
    } finally {
      clearTimeout(timer);
    }
  }
}

class StepTimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/** `EKS cluster "prod" (target tgt-1)`: registry names only, never anything from the kubeconfig. */
function describeCluster(target: ClusterTarget): string {
  return `${PROVIDER_LABEL[target.provider]} cluster ${JSON.stringify(target.name)} (target ${target.id})`;
}

/** Error names the SDKs use when no credentials are set up: retrying will not help. */
const NOT_CONFIGURED = new Set(['CredentialUnavailableError', 'CredentialsProviderError']);

interface ErrorShape {
  readonly name?: unknown;
  readonly message?: unknown;
  readonly statusCode?: unknown;
  readonly status?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: unknown };
}

/**
 * The failure of a credential step as a domain error. The cause is not kept:
 * credential libraries' errors can carry request details, and a thrown
 * error's cause is as likely to be logged as its message; the message keeps
 * the library's words, scrubbed of anything token-shaped.
 */
function stepError(step: string, error: unknown): DomainError {
  if (error instanceof LaunchRejectedError || error instanceof LauncherUnavailableError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as ErrorShape;
  const name = typeof e.name === 'string' ? e.name : 'Error';
  const message = `${step}: ${failureText(error)}`;
  const status = [e.statusCode, e.status, e.$metadata?.httpStatusCode].find((s) => typeof s === 'number');
  const refused =
    typeof status === 'number' && status >= 400 && status < 500 && status !== 408 && status !== 429;
  if (NOT_CONFIGURED.has(name) || refused || /could not load the default credentials/i.test(message)) {
    return new LaunchRejectedError(message);
  }
  return new LauncherUnavailableError(message);
}

const TOKEN_SHAPED: readonly RegExp[] = [
  /eyJ[\w-]*\.[\w-]+\.[\w-]*/g, // JWT (Entra ID, Google ID tokens)
  /k8s-aws-v1\.[\w-]+/g, // EKS token
  /ya29\.[\w.-]+/g, // Google access token
  /(bearer\s+)[^\s"',]+/gi,
  /(X-Amz-(?:Signature|Security-Token|Credential)=)[^&\s"']+/gi,
];
const MAX_FAILURE_TEXT = 500;

/** `Name: message` on one line, at most 500 characters, with token-shaped strings replaced. */
function failureText(error: unknown): string {
  let text =
    error instanceof Error
      ? error.name && error.name !== 'Error'
        ? `${error.name}: ${error.message}`
        : error.message
      : String(error);
  text = text.replace(/\s+/g, ' ').trim();
  for (const pattern of TOKEN_SHAPED) {
    text = text.replace(pattern, (_match, prefix: unknown) =>
      typeof prefix === 'string' ? `${prefix}[redacted]` : '[redacted]',
    );
  }
  return text.length > MAX_FAILURE_TEXT ? `${text.slice(0, MAX_FAILURE_TEXT)}…` : text;
}
