import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { type ExecPlugin, optionValue } from './kubeconfig.ts';

/**
 * EKS bearer tokens, made the way `aws eks get-token` and
 * aws-iam-authenticator make them: a presigned STS `GetCallerIdentity` URL
 * whose signature covers an `x-k8s-aws-id: <cluster>` header, base64url
 * encoded behind `k8s-aws-v1.`. The cluster's authenticator calls the URL to
 * learn who signed it; the header ties the token to one cluster.
 *
 * Signing is local (no network call); only resolving the credentials may
 * reach out (SSO, web identity, the ECS/EC2 metadata endpoints).
 */

/** An access key pair, with the session token of temporary credentials. */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
  readonly expiration?: Date | undefined;
}

/**
 * Source of AWS credentials; `defaultProvider()` from
 * `@aws-sdk/credential-provider-node` fits, as does `fromTemporaryCredentials`
 * or a static pair in tests.
 */
export type AwsCredentialsProvider = () => Promise<AwsCredentials>;

/** The presigned URL's own expiry, as the AWS CLI sets it; EKS accepts the token for 15 minutes after signing. */
export const EKS_URL_EXPIRES_SECONDS = 60;
export const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';
/** The header that binds a token to one cluster (its name, or its id for EKS on Outposts). */
const EKS_CLUSTER_HEADER = 'x-k8s-aws-id';

const REGION = /^[a-z]{2}(-[a-z0-9]+)+-\d+$/;
const OPTION_CLUSTER = ['--cluster-name', '--cluster-id', '-i'];
const OPTION_REGION = ['--region'];
/** `aws eks get-token --role-arn`, aws-iam-authenticator `--role` / `-r`. */
const OPTION_ROLE = ['--role-arn', '--role', '-r'];

export interface EksTokenRequest {
  readonly clusterName: string;
  readonly region: string;
}

/**
 * Which cluster and region to sign for: the target's own fields first, else
 * what the kubeconfig's exec block passes to `aws eks get-token` /
 * aws-iam-authenticator (`--cluster-name`, `--cluster-id`, `-i`, `--region`,
 * or `AWS_REGION` / `AWS_DEFAULT_REGION` in its env). Returns the reason as a
 * string when something is missing or unsupported.
 *
 * An exec block that asks for a role (`--role-arn`) is refused rather than
 * signed with the control plane's own identity, which the cluster may map
 * to different permissions: role assumption is not supported here.
 *
 * @example
 * eksTokenRequest({ region: 'eu-west-1' }, plugin); // { clusterName: 'prod', region: 'eu-west-1' }
 */
export function eksTokenRequest(
  target: { readonly clusterName?: string | undefined; readonly region?: string | undefined },
  plugin: ExecPlugin | undefined,
): EksTokenRequest | string {
  const args = plugin?.args ?? [];
  if (optionValue(args, OPTION_ROLE) !== undefined) {
    return "the kubeconfig's exec block assumes an IAM role (--role-arn), which is not supported: remove the role from the stored kubeconfig and grant the control plane's own identity access to the cluster";
  }
  const clusterName = target.clusterName ?? optionValue(args, OPTION_CLUSTER);
  if (clusterName === undefined || clusterName.trim() === '') {
    return "no cluster name is known: set the target's clusterName or keep --cluster-name in the kubeconfig's exec block";
  }
  const region =
    target.region ??
    optionValue(args, OPTION_REGION) ??
    plugin?.env.get('AWS_REGION') ??
    plugin?.env.get('AWS_DEFAULT_REGION');
  if (region === undefined) {
    return "no region is known: set the target's region or keep --region in the kubeconfig's exec block";
  }
  // The region becomes part of a host name: accept only what a region looks like.
  if (!REGION.test(region)) return 'the region is not an AWS region name';
  return { clusterName, region };
}

/** The regional STS endpoint's host (China regions live under amazonaws.com.cn). */
export const stsHost = (region: string): string =>
  `sts.${region}.amazonaws.com${region.startsWith('cn-') ? '.cn' : ''}`;

/** RFC 3986 query encoding, as SigV4 canonicalises it. */
const encode = (value: string): string =>
  encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * Sign a token for one cluster with the given credentials at `signingDate`.
 * The same inputs always give the same token.
 *
 * @example
 * const token = await eksToken({ clusterName: 'prod', region: 'eu-west-1' }, credentials, new Date());
 * // 'k8s-aws-v1.aHR0cHM6Ly9zdHMuZXUtd2VzdC0xLmFtYXpvbmF3cy5jb20vP0FjdGlvbj1HZXRDYWxsZXJJZGVudGl0eSYuLi4'
 */
export async function eksToken(
  request: EksTokenRequest,
  credentials: AwsCredentials,
  signingDate: Date,
): Promise<string> {
  const hostname = stsHost(request.region);
  const signer = new SignatureV4({
    service: 'sts',
    region: request.region,
    credentials: {
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      ...(credentials.sessionToken === undefined ? {} : { sessionToken: credentials.sessionToken }),
    },
    sha256: Hash.bind(null, 'sha256'),
  });
  const presigned = await signer.presign(
    {
      method: 'GET',
      protocol: 'https:',
      hostname,
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      // Not an x-amz- header, so the presigner keeps it a header and signs it (X-Amz-SignedHeaders).
      headers: { host: hostname, [EKS_CLUSTER_HEADER]: request.clusterName },
    },
    { expiresIn: EKS_URL_EXPIRES_SECONDS, signingDate },
  );
  const query = Object.entries(presigned.query ?? {})
    .flatMap(([key, value]) =>
      (Array.isArray(value) ? value : [value]).map((v) => `${encode(key)}=${encode(String(v ?? ''))}`),
    )
    .join('&');
  const url = `https://${hostname}/?${query}`;
  return `${EKS_TOKEN_PREFIX}${Buffer.from(url, 'utf8').toString('base64url')}`;
}
